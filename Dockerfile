FROM python:3.11-slim
WORKDIR /app
COPY pyproject.toml README.md ./
COPY tradewind tradewind
COPY scheduler scheduler
COPY worker worker
COPY state state
COPY broker_config broker_config
COPY api api
COPY cli cli
COPY triggerer triggerer
COPY examples examples
RUN pip install --no-cache-dir '.[postgres,flower]'
ENV TRADEWIND_DAGS_FOLDER=/app/dags
# The API server (tradewind api-server --host 0.0.0.0).
EXPOSE 8080
