"""`phasegate mcp`: the store behind the Model Context Protocol, for an AI
assistant beside the operators.

The assistant reads everything a person reads (the runs list, a run's status,
the causes, a decision's preview, verification) and writes one thing: a
*proposal* (decide/proposing.py), which nothing carries out until a person
seconds it. There is no tool to second, cancel, change the policy, claim,
prune or reseal.

`command` is argparse alone (registered by the parser's EXTERNAL); the `mcp`
SDK (the `mcp` extra) is imported only when the command runs (`server`,
`http`). Layer: above `cli`, whose argument checks it shares.
"""
