from core.limits import ID_REGEX, MAX_ID, MAX_ID_DIGITS, is_id_text


def test_an_id_is_one_to_eighteen_ascii_digits():
    assert [is_id_text(text) for text in ["1", "007", "9" * MAX_ID_DIGITS]] == [True] * 3
    assert [
        is_id_text(text) for text in ["", "-1", "1.0", " 1", "²", "１２", "9" * (MAX_ID_DIGITS + 1)]
    ] == [False] * 7


def test_every_id_form_fits_a_signed_bigint():
    assert MAX_ID == int("9" * MAX_ID_DIGITS) < 2**63 - 1
    assert ID_REGEX == "[0-9]{1,18}"
