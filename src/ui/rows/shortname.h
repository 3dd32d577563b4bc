/*
 * shortname: a function's name made to fit a narrow cell (a thread
 * meter's label) by dropping what says least first.  See shortname.c.
 */
#ifndef COROTOP_UI_ROWS_SHORTNAME_H
#define COROTOP_UI_ROWS_SHORTNAME_H

#include <stddef.h>

/* `name` -- a coroutine's name or a WHERE as corotop shows them
 * ("boost::fibers::context::resume()+0x52 (context.cpp:141)",
 * "main::{lambda()#2}") -- in at most `width` characters when it can be,
 * into out (n bytes, NUL-terminated when n > 0).  Returns out. */
char *shortname_fit(const char *name, size_t width, char *out, size_t n);

#endif
