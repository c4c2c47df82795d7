"""The drill's summary: kills and recovery, answers by command and status, the checks."""

from drill.checks import Check
from drill.ledger import Ledger


def table(title: str, ledger: Ledger, checks: list[Check]) -> str:
    lines = [f"== {title} =="]
    times = [kill.recovered_in for kill in ledger.kills]
    known = sorted(t for t in times if t is not None)
    if known:
        lines.append(
            f"kills: {len(times)}  claims again after: max {known[-1]:.2f} s, median "
            f"{known[len(known) // 2]:.2f} s, never {len(times) - len(known)}"
        )
    else:
        lines.append(f"kills: {len(times)}")
    lines.append(f"{'command':<10} {'answer':<34} {'count':>7}")
    for (kind, label), count in sorted(ledger.by_status().items()):
        lines.append(f"{kind:<10} {label:<34} {count:>7}")
    lines.append(f"{'check':<46} result  detail")
    for check in checks:
        verdict = "pass" if check.passed else "FAIL"
        lines.append(f"{check.name:<46} {verdict:<7} {check.detail}")
    return "\n".join(lines)
