"""Prometheus's own parser of the OpenMetrics text a server writes: reads it on stdin and
prints each sample as one JSON line (name, labels, value).

    python metrics_parse.py < metrics.txt
"""

import json
import sys

from prometheus_client.openmetrics.parser import text_string_to_metric_families

for family in text_string_to_metric_families(sys.stdin.read()):
    for sample in family.samples:
        print(json.dumps({"name": sample.name, "labels": sample.labels, "value": sample.value}))
