"""The standard provider's operators and sensors (``apache-airflow-providers-standard``), as
Tradewind's own classes: each module is named as the provider's, and is reached under its
Airflow path too."""
