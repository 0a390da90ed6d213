/*
 * pyframes_layout.h - the CPython 3.11 object layouts pyframes.c reads
 * (LP64). tests/unit/check_pyframes.c checks every offset against
 * CPython's own headers (python3.11-dev, internal/pycore_frame.h) where
 * they are installed.
 */
#ifndef GPUPROF_CORE_PYFRAMES_LAYOUT_H
#define GPUPROF_CORE_PYFRAMES_LAYOUT_H

/* CPython 3.11 (x86_64 and other LP64) layouts: offsets in bytes. */
enum {
    TS_CFRAME = 56,        /* PyThreadState.cframe */
    CF_CURRENT = 8,        /* _PyCFrame.current_frame */
    FR_CODE = 32,          /* _PyInterpreterFrame.f_code */
    FR_PREVIOUS = 48,      /* .previous */
    FR_PREV_INSTR = 56,    /* .prev_instr */
    FR_IS_ENTRY = 68,      /* .is_entry (bool) */
    OB_TYPE = 8,           /* PyObject.ob_type */
    VAR_SIZE = 16,         /* PyVarObject.ob_size */
    CO_FIRSTLINENO = 72,   /* PyCodeObject.co_firstlineno (int) */
    CO_FILENAME = 112,     /* .co_filename */
    CO_QUALNAME = 128,     /* .co_qualname */
    CO_LINETABLE = 136,    /* .co_linetable (bytes) */
    CO_CODE = 184,         /* .co_code_adaptive: the instructions */
    STR_LENGTH = 16,       /* PyASCIIObject.length */
    STR_STATE = 32,        /* .state bit field */
    STR_ASCII_DATA = 48,   /* sizeof(PyASCIIObject): compact ASCII data */
    STR_UTF8_LENGTH = 48,  /* PyCompactUnicodeObject.utf8_length */
    STR_UTF8 = 56,         /* .utf8 */
    BYTES_DATA = 32,       /* PyBytesObject.ob_sval */
};

#endif /* GPUPROF_CORE_PYFRAMES_LAYOUT_H */
