"""The standard provider's operators, sensors and decorators as Tradewind's own classes.

``apache-airflow-providers-standard`` (1.21) is what most Airflow DAG folders import from:
``PythonOperator``, ``BranchPythonOperator``, ``EmptyOperator``, the time and file sensors...
Each module here builds one family on Tradewind's ``BaseOperator``, ``BaseSensorOperator`` and
the TaskFlow decorators, with the provider's arguments and behaviour; ``deferrable=True`` waits
on the triggerer (``tradewind/triggers/``, docs/triggerer.md), and an argument that needs a part
Tradewind lacks is refused in one line.
"""
