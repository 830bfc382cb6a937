"""Where ``airflow.sdk.execution_time`` names live, so Airflow's imports of them swap over."""
