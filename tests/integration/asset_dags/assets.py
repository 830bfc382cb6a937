"""A producer whose success updates an asset, and the DAG scheduled on that asset."""

from tradewind import DAG, Asset, task

orders = Asset("s3://warehouse/orders")

with DAG("orders_producer"):

    @task(outlets=[orders])
    def load(dag_run=None, outlet_events=None):
        outlet_events[orders].extra["run"] = dag_run.run_id

    load()

with DAG("orders_consumer", schedule=[orders]):

    @task(inlets=[orders])
    def report(inlet_events=None):
        return inlet_events[orders][-1].extra["run"]

    report()
