#!/usr/bin/env python3
"""Writes a C++ source defining ws::config::embedded_quickstart_config() from a YAML file.

Run by meson at build time, so configs/quickstart.yaml stays the single source of the text.
The bytes go out as a char array rather than a raw string literal, which no text can break.
"""
import sys


def main() -> int:
    if len(sys.argv) != 3:
        print("usage: embed.py INPUT.yaml OUTPUT.cpp", file=sys.stderr)
        return 2
    with open(sys.argv[1], "rb") as f:
        data = f.read()
    rows = []
    for i in range(0, len(data), 16):
        # Written as signed values: `char` is signed on x86 and a narrowing brace initialiser
        # from 128..255 would not compile.
        rows.append("    " + ", ".join(str(b - 256 if b > 127 else b) for b in data[i:i + 16]) + ",")
    out = [
        "// Generated from configs/quickstart.yaml by control/config/embed.py; do not edit.",
        '#include "control/config/config.hpp"',
        "",
        "namespace ws::config {",
        "",
        "namespace {",
        "constexpr char kQuickstart[] = {",
        *rows,
        "    0};",
        "}  // namespace",
        "",
        "std::string_view embedded_quickstart_config() {",
        f"  return std::string_view(kQuickstart, {len(data)});",
        "}",
        "",
        "}  // namespace ws::config",
        "",
    ]
    with open(sys.argv[2], "w", encoding="ascii") as f:
        f.write("\n".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
