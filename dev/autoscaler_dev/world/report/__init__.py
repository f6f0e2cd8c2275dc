"""A simulated run's report: the summary and timeline as text for the terminal (``text``), and one HTML page per
scenario with plotly charts, the decision log and each node's life, plus the tour's index (``page``)."""

from autoscaler_dev.world.report.page import html_report, tour_index, write_index, write_report
from autoscaler_dev.world.report.text import summary_table, timeline_text
from autoscaler_dev.world.timeline import grouped

__all__ = [
    "grouped",
    "html_report",
    "summary_table",
    "timeline_text",
    "tour_index",
    "write_index",
    "write_report",
]
