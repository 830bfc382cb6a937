"""Request and response models of the REST API, named and shaped as Airflow 3.3's OpenAPI."""
