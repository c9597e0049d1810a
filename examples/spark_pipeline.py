"""A topics → Spark → topics pipeline, batch and streaming (the guide is docs/SPARK.md).

    .venv/bin/topics serve &
    .venv/bin/python examples/spark_pipeline.py [--url http://127.0.0.1:4000]

1. Seeds ``shop.orders`` with 1000 order events, once (nothing is seeded when it has records).
2. Batch: reads orders 1..1000, sums the revenue per product with Spark and writes one record
   per product to ``shop.revenue`` under a fixed ``writeId``. The job reads a fixed range, so it
   is the same job every time it runs: a re-run is deduped by the server, not appended again.
3. Streaming: appends 5 new orders, then a streaming query turns every order not yet seen into
   a ``shop.order-revenue`` record, with ``trigger(availableNow=True)``: it reads what is there
   and stops. Its checkpoint keeps the offsets, so a re-run reads only the orders added since.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import random
import sys
import tempfile
from pathlib import Path

# Spark's Python workers import topics_spark: they must run this interpreter (the venv's)
os.environ["PYSPARK_PYTHON"] = sys.executable

import topics  # noqa: E402
import topics_spark  # noqa: E402
from pyspark.sql import SparkSession  # noqa: E402
from pyspark.sql import functions as F  # noqa: E402

ORDERS, REVENUE, ORDER_REVENUE = "shop.orders", "shop.revenue", "shop.order-revenue"
SEEDED = 1000
PRICES = {"apple": 0.5, "banana": 0.25, "cherry": 4.0, "durian": 12.5}
ORDER = "order_id INT, product STRING, qty INT, price DOUBLE"  # the JSON in an order's data
DAY_MS = 24 * 3600 * 1000


def orders(first_id: int, n: int, rng: random.Random) -> list[dict[str, object]]:
    out: list[dict[str, object]] = []
    for order_id in range(first_id, first_id + n):
        product = rng.choice(sorted(PRICES))
        data = {"order_id": order_id, "product": product, "qty": rng.randint(1, 5), "price": PRICES[product]}
        out.append({"data": data, "tag": product})
    return out


def prepare(client: topics.Client) -> None:
    """Seeds the orders once; the result topics dedupe re-sent writes for a day, not 2 minutes."""
    for name in (REVENUE, ORDER_REVENUE):
        client.create_topic(name, idempotency_window_ms=DAY_MS)
    try:
        empty = client.topic(ORDERS).head_seq == 0
    except topics.TopicNotFound:
        empty = True
    if empty:
        client.append_many(ORDERS, orders(1, SEEDED, random.Random(13)), idempotency_key="seed-orders")
        print(f"seeded {ORDERS} with {SEEDED} orders")


def batch(spark: SparkSession, url: str) -> None:
    rows = (
        spark.read.format("topics")
        .option("url", url)
        .option("topic", ORDERS)
        .option("endingOffsets", f'{{"{ORDERS}": {SEEDED}}}')  # seqs 1..1000: a fixed input
        .load()
    )
    parsed = rows.select(F.from_json("data", ORDER).alias("o")).select("o.*")
    revenue = (
        parsed.groupBy("product")
        .agg(
            F.count("*").alias("orders"),
            F.sum("qty").alias("units"),
            F.sum(F.col("qty") * F.col("price")).alias("revenue"),
        )
        .orderBy("product")
    )
    revenue.show()
    (
        revenue.coalesce(1)  # 4 rows: one task, one block, one idempotency key
        .select(
            F.to_json(F.struct("product", "orders", "units", "revenue")).alias("data"),
            F.col("product").alias("tag"),
        )
        .write.format("topics")
        .mode("append")
        .option("url", url)
        .option("topic", REVENUE)
        .option("writeId", f"revenue-orders-1-{SEEDED}")  # same input, same id: a re-run dedupes
        .save()
    )


def streaming(spark: SparkSession, url: str, checkpoint: str) -> None:
    rows = (
        spark.readStream.format("topics")
        .option("url", url)
        .option("topic", ORDERS)
        .option("maxOffsetsPerTrigger", 400)  # micro-batches of at most 400 seqs
        .option("minPartitions", 2)  # 2 tasks per micro-batch (a stream's default is 1)
        .load()
    )
    parsed = rows.select(F.from_json("data", ORDER).alias("o")).select("o.*")
    revenue = (F.col("qty") * F.col("price")).alias("revenue")
    out = parsed.select(
        F.to_json(F.struct("order_id", "product", revenue)).alias("data"), F.col("product").alias("tag")
    )
    query = (
        out.writeStream.format("topics")
        .option("url", url)
        .option("topic", ORDER_REVENUE)
        .option("checkpointLocation", checkpoint)
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    sizes = [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]]
    print(f"streaming query read {sum(sizes)} orders in micro-batches of {sizes}")


def main() -> None:
    parser = argparse.ArgumentParser(description="topics -> Spark -> topics, batch and streaming")
    parser.add_argument("--url", default=os.environ.get("TOPICS_URL", "http://127.0.0.1:4000"))
    parser.add_argument("--checkpoint", help="the streaming checkpoint directory (default: in the temp dir)")
    args = parser.parse_args()
    url = args.url
    with topics.Client(url) as client:
        prepare(client)
        # one checkpoint per server and incarnation of shop.orders: a fresh server starts afresh
        first = next(iter(client.read(ORDERS, 0, to_seq=1)))
        key = hashlib.sha1(f"{url} {first.ts}".encode()).hexdigest()[:12]
        checkpoint = args.checkpoint or str(Path(tempfile.gettempdir()) / f"topics-spark-example-{key}")

        spark = (
            SparkSession.builder.master("local[2]")
            .appName("topics-spark-pipeline")
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .getOrCreate()
        )
        spark.sparkContext.setLogLevel("ERROR")
        topics_spark.register(spark)
        try:
            print(f"\n== batch: revenue per product of orders 1..{SEEDED} -> {REVENUE}")
            before = client.topic(REVENUE).count
            batch(spark, url)
            print(f"{REVENUE} holds {client.topic(REVENUE).count} records ({before} before this write)")

            print(f"\n== streaming: {ORDERS} -> {ORDER_REVENUE}, checkpoint {checkpoint}")
            head = client.topic(ORDERS).head_seq
            client.append_many(ORDERS, orders(head + 1, 5, random.Random(head)))
            print(f"appended 5 new orders to {ORDERS} (seqs {head + 1}..{head + 5})")
            streaming(spark, url, checkpoint)
            print(f"{ORDER_REVENUE} holds {client.topic(ORDER_REVENUE).count} records")
        finally:
            spark.stop()


if __name__ == "__main__":
    main()
