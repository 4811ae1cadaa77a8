"""Running a workflow: the start sequence and its plan (`runner`, `planner`),
the checkpoint written at each phase boundary (`journal`), effects whose
intent is durable before they act (`ledger`, `completions`), durable steps
(`steplog`), phase outputs (`outputs`), environment fingerprints
(`environment`), the lease that fences a holder (`lease`), the frontier
rule (`frontier`), the context a phase is handed (`phasecontext`) and a
decision applied to the run's rows (`applying`).

Layer: above `authoring`; below `views`. It never renders anything.
"""
