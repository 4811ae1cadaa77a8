"""#17 finding 7: a hash on the console's screen is 12 hex characters, never
wrapped into two different-looking halves (the full value is in --json)."""

from __future__ import annotations

from phasegate.console._format import hashes, middle


def test_long_digests_are_cut_to_twelve_hex_characters() -> None:
    assert (
        hashes("probe tax_rates changed: sha256:a5ff3f96e5a51904 -> sha256:5484374281502299")
        == "probe tax_rates changed: a5ff3f96e5a5… -> 548437428150…"
    )
    full = "57311364dcc7e8402983297b7624c19a56d78ad46018a0d40c232baa15798015"
    assert hashes(f"(expected {full}, actual {full[::-1]})") == "(expected 57311364dcc7…, actual 51089751aab2…)"


def test_what_is_not_a_digest_is_left_alone() -> None:
    for text in ("inv-0003", "deadbeef", "run-2026-11-27", "abcdef0123456789xyz", "ids 1234567890123456789"):
        assert hashes(text) == text


def test_ids_are_cut_from_the_middle_so_their_end_stays() -> None:
    assert middle("pipeline-orders-2026-11-27", 22) == "pipeline…rs-2026-11-27"
    assert middle("short", 22) == "short"
    assert len(middle("x" * 100, 22)) == 22
