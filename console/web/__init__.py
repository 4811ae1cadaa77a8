"""`phasegate serve`: the console in a browser, through textual-serve.

The page is textual-serve's terminal; every session runs the same
`phasegate console` in its own process. What textual-serve leaves out (it has
no authentication and no Origin check) is added here, and the package is an
optional extra (`pip install 'phasegate[web]'`): nothing else imports it."""
