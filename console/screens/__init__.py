"""The console's screens: the runs list, one run's detail, the action modals and help."""
