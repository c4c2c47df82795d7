"""The drill's summary: kills and recovery, answers by command and status, the checks."""

from drill.checks import Check
from drill.ledger import Ledger, faults_named


def table(title: str, ledger: Ledger, checks: list[Check]) -> str:
    lines = [f"== {title} =="]
    for fault in dict.fromkeys(kill.fault for kill in ledger.kills):
        times = [kill.recovered_in for kill in ledger.kills if kill.fault == fault]
        known = sorted(t for t in times if t is not None)
        line = f"{faults_named(fault)}: {len(times)}"
        if known:
            line += (
                f"  claims again after: max {known[-1]:.2f} s, median "
                f"{known[len(known) // 2]:.2f} s, never {len(times) - len(known)}"
            )
        lines.append(line)
    if ledger.moves:
        lines.append(f"writer moves: {len(ledger.moves)}")
    lines.append(f"{'command':<10} {'answer':<34} {'count':>7}")
    for (kind, label), count in sorted(ledger.by_status().items()):
        lines.append(f"{kind:<10} {label:<34} {count:>7}")
    lines.append(f"{'check':<46} result  detail")
    for check in checks:
        verdict = "pass" if check.passed else "FAIL"
        lines.append(f"{check.name:<46} {verdict:<7} {check.detail}")
    return "\n".join(lines)
