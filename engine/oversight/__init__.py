"""Who is deciding and what they may do: the operator's identity
(`identity`), claims on a run (`claims`) and the store's policy of proposals
and seconds (`policy`).

Layer: above `views`; below `decide`, whose records say who decided.
"""
