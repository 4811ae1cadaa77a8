"""What a team's own monitoring sees of phasegate: Prometheus metrics,
OpenTelemetry spans and JSON log lines.

The engine calls one cheap object, `hooks.OBSERVER`, at the few places where
something worth counting happens (a run attempt, a phase, a checkpoint's
commit, a durable step, an effect). It does nothing unless a metrics or
tracing observer was installed, and neither `prometheus_client` nor
`opentelemetry` is imported until one is: the `metrics` and `otel` extras
are optional, and a process without them pays a method call per event.
"""
