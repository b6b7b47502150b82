# The stock model (stock.sql) as a Python model: the same MERGE clauses, with the model's
# DataFrame as the MERGE source. First run: the stock on hand (a Spark DataFrame); later runs:
# the phase's sales, filtered in pandas (the `phase` config is var('phase'), python_models.yml).


def model(dbt, session):
    dbt.config(
        materialized="merge_tablets",
        unique_key="item",
        when_matched=[
            {"condition": "t.qty_on_hand - s.qty_sold = 0", "action": "delete"},
            {"action": "update", "set": {"qty_on_hand": "t.qty_on_hand - s.qty_sold"}},
        ],
        when_not_matched=[
            {"action": "insert", "values": {"item": "s.item", "qty_on_hand": "s.qty_sold"}},
        ],
    )
    if not dbt.is_incremental:
        return dbt.ref("stock_initial").select("item", "qty_on_hand")
    sales = dbt.ref("daily_sales").toPandas()
    today = sales[sales["phase"] == int(dbt.config.get("phase"))]
    return today[["item", "qty_sold"]].reset_index(drop=True)
