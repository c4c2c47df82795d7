"""Read one merchant-codes file in a process of its own and say what it cost: `python -m
tests.support.codes_file_reading <path>` prints JSON with the outcome (the codes read, or the
refusal under `file`), the seconds it took and how far the process's peak memory rose."""

import json
import resource
import sys
import time
from pathlib import Path


def main(path: Path) -> None:
    import django

    django.setup()
    from coupons.errors import CodesFileInvalid
    from coupons.services.merchant_codes import merchant_codes_read

    content = path.read_bytes()
    peak_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    started = time.monotonic()
    try:
        codes = merchant_codes_read(name=path.name, content=content)
        outcome = {"codes": len(codes)}
    except CodesFileInvalid as refused:
        outcome = {"refused": [str(message) for message in refused.fields["file"]]}
    seconds = time.monotonic() - started
    grew = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - peak_before
    print(json.dumps({**outcome, "seconds": seconds, "grew_mib": grew / 1024}))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
