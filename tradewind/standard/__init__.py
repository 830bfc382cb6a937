"""The standard provider's operators, sensors and decorators as Tradewind's own classes.

``apache-airflow-providers-standard`` (1.21) is what most Airflow DAG folders import from:
``PythonOperator``, ``BranchPythonOperator``, ``EmptyOperator``, the time and file sensors...
Each module here builds one family on Tradewind's ``BaseOperator``, ``BaseSensorOperator`` and
the TaskFlow decorators, with the provider's arguments and behaviour; a few of its arguments
that need a part Tradewind lacks (``deferrable=True``: the triggerer) are refused in one line.
"""
