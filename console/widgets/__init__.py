"""The console's widgets, one per module."""

from .counts_bar import CountsBar
from .info_panel import InfoPanel
from .phase_strip import PhaseStrip
from .runs_table import RunsTable

__all__ = ["CountsBar", "InfoPanel", "PhaseStrip", "RunsTable"]
