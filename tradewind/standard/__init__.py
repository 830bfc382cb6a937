"""Airflow's standard operators as Tradewind's own classes, one module per kind (``email``...)."""
