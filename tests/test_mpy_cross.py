"""Every file of firmware/ and bus_protocol/ compiles with mpy-cross for the MCU
architectures we target: armv6m (RP2040), armv7emsp (STM32F4, RP2350 Cortex-M33 uses
the same Thumb-2 subset), xtensawin (ESP32, ESP32-S3), rv32imc (ESP32-C3, RP2350 Hazard3).
Catches syntax MicroPython does not accept (and native/viper emitter errors)."""
import subprocess

import pytest

from tests.conftest import MPY_CROSS, REPO, needs

ARCHS = ["armv6m", "armv7emsp", "xtensawin", "rv32imc"]
FILES = sorted(p for d in ("firmware", "bus_protocol") for p in (REPO / d).rglob("*.py"))


def test_files_found():
    names = {p.relative_to(REPO).as_posix() for p in FILES}
    assert "firmware/agent.py" in names and "bus_protocol/messages.py" in names
    assert "firmware/hal/rp2_uart.py" in names and "firmware/hal/stm32_can.py" in names


@pytest.mark.slow
@needs("mpy-cross")
@pytest.mark.parametrize("arch", ARCHS)
def test_mpy_cross_compiles_everything(arch, tmp_path):
    exe = MPY_CROSS
    bad = []
    for src in FILES:
        rel = src.relative_to(REPO)
        if "@micropython.asm_thumb" in src.read_text() and not arch.startswith("arm"):
            continue   # ARM assembly (firmware/accel/thumb.py): imported only where it compiles
        out = tmp_path / rel.with_suffix(".mpy")
        out.parent.mkdir(parents=True, exist_ok=True)
        r = subprocess.run([exe, "-march=" + arch, "-s", rel.as_posix(), "-o", str(out), str(src)],
                           capture_output=True, text=True, timeout=60)
        if r.returncode != 0 or not out.exists() or out.stat().st_size == 0:
            bad.append("%s: %s" % (rel, (r.stderr or r.stdout).strip()))
    assert not bad, "\n".join(bad)


@pytest.mark.slow
@needs("mpy-cross")
@pytest.mark.parametrize("arch", ["x64", "xtensawin"])
def test_flash_builds_for_a_board_without_thumb(arch, tmp_path):
    """`linkteam flash` onto a board with no ARM assembly (a vboard is x64): every module
    the agent imports there is built; only the optional accelerators and other boards' HALs
    may be left out."""
    from host.tools.flash import build
    files = build(arch, tmp_path)
    assert {"firmware/main.mpy", "firmware/agent.mpy", "firmware/hal/unix.mpy",
            "bus_protocol/messages.mpy"} <= set(files)
    assert "firmware/accel/thumb.mpy" not in files
