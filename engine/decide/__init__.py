"""An operator's decision, from fit to record: the rule that fits a decision
to a run (`fit`), what it would do (`preview`), the gate of claims, policy
and seconds (`gate`), the audited record (`recording`), references to
effects (`effectref`), the causes that group runs needing the same answer
(`causes`), a decision over a group (`batch`) and the causes screen's
triage (`triage`). A recorded decision is applied to the run by
`phasegate.run.applying`.

Layer: above `oversight`; below `engine`.
"""
