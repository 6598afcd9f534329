"""Suite-wide: every realize that finds its program by form (tolk.uop.form) also checks the
find against the full program key, so every test is also a test of the form keys."""

import tolk.callify

tolk.callify.CHECK_FORMS = True
