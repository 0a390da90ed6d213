/*
 * check_pyframes.c - Python frames (lib/core/pyframes.c) below the level
 * of a running interpreter (tests/scripts/python-frames.sh measures one):
 *   layout     every offset of pyframes_layout.h against CPython 3.11's own
 *              headers (python3.11-dev's internal/pycore_frame.h), when
 *              the build found them (GPUPROF_HAVE_PY311_HEADERS); says SKIP
 *              otherwise;
 *   line_table the 3.11 location-table decoder against the lines CPython
 *              itself gives (co_positions) for every code unit of a
 *              function with short, one-line, long and no-location
 *              entries (made with /usr/bin/python3 3.11.2).
 */
#include "gen/features.h" /* GPUPROF_HAVE_PY311_HEADERS */
#if defined(GPUPROF_HAVE_PY311_HEADERS)
#define Py_BUILD_CORE 1
#include <Python.h>
#include <internal/pycore_frame.h>
#endif
#include <check.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "core/pyframes_layout.h"
#include "core/unwind.h"
#include "support/suite.h"

START_TEST(layout)
{
#if defined(GPUPROF_HAVE_PY311_HEADERS)
    ck_assert_uint_eq(PY_VERSION_HEX >> 16, 0x030b);
    ck_assert_uint_eq(TS_CFRAME, offsetof(PyThreadState, cframe));
    ck_assert_uint_eq(CF_CURRENT, offsetof(_PyCFrame, current_frame));
    ck_assert_uint_eq(FR_CODE, offsetof(_PyInterpreterFrame, f_code));
    ck_assert_uint_eq(FR_PREVIOUS, offsetof(_PyInterpreterFrame, previous));
    ck_assert_uint_eq(FR_PREV_INSTR, offsetof(_PyInterpreterFrame, prev_instr));
    ck_assert_uint_eq(FR_IS_ENTRY, offsetof(_PyInterpreterFrame, is_entry));
    ck_assert_uint_eq(OB_TYPE, offsetof(PyObject, ob_type));
    ck_assert_uint_eq(VAR_SIZE, offsetof(PyVarObject, ob_size));
    ck_assert_uint_eq(CO_FIRSTLINENO, offsetof(PyCodeObject, co_firstlineno));
    ck_assert_uint_eq(CO_FILENAME, offsetof(PyCodeObject, co_filename));
    ck_assert_uint_eq(CO_QUALNAME, offsetof(PyCodeObject, co_qualname));
    ck_assert_uint_eq(CO_LINETABLE, offsetof(PyCodeObject, co_linetable));
    ck_assert_uint_eq(CO_CODE, offsetof(PyCodeObject, co_code_adaptive));
    ck_assert_uint_eq(STR_LENGTH, offsetof(PyASCIIObject, length));
    ck_assert_uint_eq(STR_STATE, offsetof(PyASCIIObject, state));
    ck_assert_uint_eq(STR_ASCII_DATA, sizeof(PyASCIIObject));
    ck_assert_uint_eq(STR_UTF8_LENGTH,
                      offsetof(PyCompactUnicodeObject, utf8_length));
    ck_assert_uint_eq(STR_UTF8, offsetof(PyCompactUnicodeObject, utf8));
    ck_assert_uint_eq(BYTES_DATA, offsetof(PyBytesObject, ob_sval));
    /* The state bits read: compact (0x20) and ascii (0x40). */
    PyASCIIObject a = {0};
    a.state.compact = 1;
    a.state.ascii = 1;
    uint32_t bits;
    memcpy(&bits, (char *)&a + STR_STATE, sizeof(bits));
    ck_assert_uint_eq(bits, 0x60);
#else
    printf("SKIP layout: CPython 3.11's internal headers not installed\n");
#endif
}
END_TEST

/* The function (its source, line 1 blank):
 *   def f(a, b):
 *       x = a + \
 *           b
 *       for i in range(3):
 *           x += i * (a
 *                     - b)
 *       if x > 1000000:
 *           raise ValueError(
 *               "far")
 *       return [y for y in range(x)]
 * its co_linetable, and co_positions()' line for each code unit. */
static const uint8_t table[] = {
    0x80, 0x00, 0xd8, 0x08, 0x09, 0xd8, 0x08, 0x09, 0xf1, 0x03, 0x01, 0x09,
    0x0a, 0x80, 0x41, 0xe5, 0x0d, 0x12, 0x90, 0x31, 0x89, 0x58, 0x8c, 0x58,
    0xf0, 0x00, 0x02, 0x05, 0x17, 0xf0, 0x00, 0x02, 0x05, 0x17, 0x88, 0x01,
    0xd8, 0x08, 0x09, 0x88, 0x51, 0x90, 0x21, 0xd8, 0x14, 0x15, 0xf1, 0x03,
    0x01, 0x13, 0x16, 0xf1, 0x00, 0x01, 0x0e, 0x17, 0xf1, 0x00, 0x01, 0x09,
    0x17, 0x88, 0x01, 0x88, 0x01, 0xe0, 0x07, 0x08, 0x88, 0x37, 0x82, 0x7b,
    0x80, 0x7b, 0xdd, 0x0e, 0x18, 0xd8, 0x0c, 0x11, 0xf1, 0x03, 0x01, 0x0f,
    0x13, 0xf4, 0x00, 0x01, 0x0f, 0x13, 0xf0, 0x00, 0x01, 0x09, 0x13, 0xe0,
    0x0b, 0x20, 0xd0, 0x0b, 0x20, 0x95, 0x75, 0x98, 0x51, 0x91, 0x78, 0x94,
    0x78, 0xd0, 0x0b, 0x20, 0xd1, 0x0b, 0x20, 0xd4, 0x0b, 0x20, 0xd0, 0x04, 0x20
};
static const uint32_t lines[] = {
    2, 3, 4, 3, 3, 3, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 6, 6,
    6, 7, 6, 6, 6, 6, 6, 6, 6, 6, 8, 8, 8, 8, 8, 8, 9, 9, 9, 9, 9, 9, 10, 9, 9,
    9, 9, 9, 9, 9, 9, 11, 11, 11, 11, 11, 11, 11, 11, 11, 11, 11, 11, 11, 11,
    11, 11, 11, 11, 11, 11, 11, 11, 11, 11, 11
};

START_TEST(line_table)
{
    size_t units = sizeof(lines) / sizeof(lines[0]);
    for (size_t at = 0; at < units; at++)
        ck_assert_msg(gpuprof__py_line(table, sizeof(table), 2, at) ==
                          lines[at],
                      "unit %zu: %u, want %u", at,
                      gpuprof__py_line(table, sizeof(table), 2, at),
                      lines[at]);
    /* Past the table, a cut table, an empty one: no line, no read past. */
    ck_assert_uint_eq(gpuprof__py_line(table, sizeof(table), 2, units), 0);
    ck_assert_uint_eq(gpuprof__py_line(table, 3, 2, 40), 0);
    ck_assert_uint_eq(gpuprof__py_line(table, 0, 2, 0), 0);
}
END_TEST

int main(void)
{
    const test_case cases[] = {
        {"layout", layout, 30},
        {"line_table", line_table, 30},
    };
    return RUN_SUITE("pyframes", cases);
}
