"""The console's widgets, one per module."""

from .counts_bar import CountsBar
from .info_panel import InfoPanel
from .key_bar import KeyBar
from .phase_strip import PhaseStrip
from .runs_table import RunsTable

__all__ = ["CountsBar", "InfoPanel", "KeyBar", "PhaseStrip", "RunsTable"]
