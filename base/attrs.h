/*
 * attrs.h - compiler attributes memdiff uses, each with its reason (base layer: core and
 * backends both use it).
 */
#ifndef MEMDIFF_BASE_ATTRS_H
#define MEMDIFF_BASE_ATTRS_H

#include <stdio.h> /* mingw-w64 defines __MINGW_PRINTF_FORMAT there */

/* Checks printf-style arguments where the compiler can. mingw-w64: "printf" would mean
 * msvcrt's formats (no %zu, %llx as %I64x), while vsnprintf here is mingw's C99 one under
 * -std=c11, which __MINGW_PRINTF_FORMAT names. */
#if defined(__MINGW_PRINTF_FORMAT)
#define MEMDIFF__PRINTF(fmt, args) __attribute__((format(__MINGW_PRINTF_FORMAT, fmt, args)))
#elif defined(__GNUC__)
#define MEMDIFF__PRINTF(fmt, args) __attribute__((format(printf, fmt, args)))
#else
#define MEMDIFF__PRINTF(fmt, args)
#endif

/* Keeps a rarely taken path out of its caller, so that the common path stays small. */
#if defined(__GNUC__)
#define MEMDIFF__NOINLINE __attribute__((noinline))
#elif defined(_MSC_VER)
#define MEMDIFF__NOINLINE __declspec(noinline)
#else
#define MEMDIFF__NOINLINE
#endif

/* n bytes of the calling function's frame, on the thread's own stack (never a sanitizer's fake
 * stack), freed when it returns. */
#if defined(_MSC_VER)
#include <malloc.h>
#define MEMDIFF__STACK_ALLOC(n) _alloca(n)
#else
#define MEMDIFF__STACK_ALLOC(n) __builtin_alloca(n)
#endif

#endif /* MEMDIFF_BASE_ATTRS_H */
