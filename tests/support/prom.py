"""The Prometheus text exposition format (version 0.0.4), read back for tests and benchmarks.

  parse(text)  -> {(name, frozenset(labels.items())): value}
  scrape(port) -> the same, from wirespeed-control serve's /metrics on 127.0.0.1
  value(m, name, **labels) -> one sample, 0.0 when absent

Comment lines (# HELP, # TYPE) are skipped; label values may hold escaped quotes,
backslashes and newlines and commas; a sample with a value that is not a number is left out.
"""
import re
import urllib.request

_SAMPLE = re.compile(r'^([A-Za-z_:][A-Za-z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+\S+)?\s*$')
_LABEL = re.compile(r'\s*([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"\s*,?')
_UNESCAPE = {"\\\\": "\\", '\\"': '"', "\\n": "\n"}


def _labels(text):
    labels, pos = {}, 0
    while pos < len(text):
        m = _LABEL.match(text, pos)
        if m is None:
            return None
        labels[m.group(1)] = re.sub(r'\\[\\"n]', lambda e: _UNESCAPE[e.group(0)], m.group(2))
        pos = m.end()
    return labels


def parse(text):
    """{(name, frozenset(labels.items())): value} of every sample in `text`."""
    out = {}
    for line in text.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        m = _SAMPLE.match(line)
        if m is None:
            continue
        labels = _labels(m.group(2) or "")
        if labels is None:
            continue
        try:
            out[(m.group(1), frozenset(labels.items()))] = float(m.group(3))
        except ValueError:
            pass
    return out


def scrape_text(port, timeout=5):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=timeout) as r:
        return r.read().decode()


def scrape(port, timeout=5):
    return parse(scrape_text(port, timeout))


def value(m, name, /, **labels):
    return m.get((name, frozenset(labels.items())), 0.0)


def self_test():
    text = ('# HELP a_total A.\n# TYPE a_total counter\na_total 3\n'
            'b{port="p0",reason="x,y"} 1.5e3\n'
            'c{name="q\\"uo\\\\te\\nnl"} +Inf 1700000000000\n'
            'd{x="1"} NaN\n'
            'broken{x=1} 2\n')
    m = parse(text)
    assert value(m, "a_total") == 3.0, m
    assert value(m, "b", port="p0", reason="x,y") == 1500.0, m
    assert value(m, "c", name='q"uo\\te\nnl') == float("inf"), m
    assert ("d", frozenset({("x", "1")})) in m, m
    assert not any(k[0] == "broken" for k in m), m
    assert value(m, "missing") == 0.0
    print("prom: ok")


if __name__ == "__main__":
    self_test()
