"""Airflow's provider packages on Tradewind: installing them without Airflow, and their registry.

``install.py`` is ``tradewind providers install``; ``registry.py`` reads the installed providers'
``apache_airflow_provider`` entry points (their hooks and connection types), as Airflow's
``ProvidersManager`` does; ``status.py`` says which installed providers are usable.
"""
