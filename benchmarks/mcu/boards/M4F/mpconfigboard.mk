# Out-of-tree QEMU board (BOARD_DIR) for host/tools/mcu.py: a Cortex-M4F with its
# single-precision FPU, as on an STM32F4, on QEMU's mps2-an386 machine. Floats are
# single precision (MICROPY_FLOAT_IMPL = float), as the stm32 and rp2 ports build them.
include $(BOARD_DIR)/../mps2.mk
QEMU_MACHINE = mps2-an386

CFLAGS += -mthumb -mcpu=cortex-m4 -mfloat-abi=hard -mfpu=fpv4-sp-d16
CFLAGS += -DMICROPY_HW_MCU_NAME='"Cortex-M4F"'

SRC_BOARD_O = shared/runtime/gchelper_native.o shared/runtime/gchelper_thumb2.o

MPY_CROSS_FLAGS += -march=armv7emsp

SUPPORTS_HARDWARE_FP_SINGLE = 1
