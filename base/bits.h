/*
 * bits.h - bit, bitmap and stretch helpers of the hot loops (base layer: the backends decode
 * with them, the core stores with them). All static inline: a call per value would cost more
 * than the work.
 */
#ifndef MEMDIFF_BASE_BITS_H
#define MEMDIFF_BASE_BITS_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define MEMDIFF__MIN(a, b) ((a) < (b) ? (a) : (b))
#define MEMDIFF__MAX(a, b) ((a) > (b) ? (a) : (b))

/* The lowest set bit of x (x != 0). */
static inline unsigned memdiff__ctz64(uint64_t x)
{
#if defined(__GNUC__)
    return (unsigned)__builtin_ctzll(x);
#else
    unsigned n = 0;
    while (!(x & 1)) {
        x >>= 1;
        n++;
    }
    return n;
#endif
}

/* The highest set bit of x (x != 0), as a count of the clear bits above it. */
static inline unsigned memdiff__clz64(uint64_t x)
{
#if defined(__GNUC__)
    return (unsigned)__builtin_clzll(x);
#else
    unsigned n = 0;
    while (!(x >> 63)) {
        x <<= 1;
        n++;
    }
    return n;
#endif
}

/* bytes in pages of ps bytes, ps a power of two (every page size is; a snapshot file's is
 * checked on load): a shift, where a 64-bit division costs tens of cycles (on the AMD EPYC of
 * docs/performance.md, a fifth of the time of the snapshot's sink for a run of one page). */
static inline uint64_t memdiff__in_pages(uint64_t bytes, uint64_t ps)
{
    return bytes >> memdiff__ctz64(ps);
}

/* Sets bits [from, from + n) of the bitmap w (bit b: w[b / 64] >> b % 64). */
static inline void memdiff__set_bits(uint64_t *w, uint64_t from, uint64_t n)
{
    for (uint64_t b = from; b < from + n;) {
        unsigned off = (unsigned)(b % 64);
        uint64_t take = 64 - off < from + n - b ? 64 - off : from + n - b;
        w[b / 64] |= (take == 64 ? ~UINT64_C(0) : (UINT64_C(1) << take) - 1) << off;
        b += take;
    }
}

/* The set bits of x. */
static inline unsigned memdiff__popcount64(uint64_t x)
{
#if defined(__GNUC__) && defined(__POPCNT__)
    return (unsigned)__builtin_popcountll(x);
#else
    /* Without the instruction (the x86-64 baseline has none) GCC calls libgcc's
     * __popcountdi2; the bits counted in parallel in a register cost less than that call. */
    x -= (x >> 1) & UINT64_C(0x5555555555555555);
    x = (x & UINT64_C(0x3333333333333333)) + ((x >> 2) & UINT64_C(0x3333333333333333));
    x = (x + (x >> 4)) & UINT64_C(0x0f0f0f0f0f0f0f0f);
    return (unsigned)((x * UINT64_C(0x0101010101010101)) >> 56);
#endif
}

/* The first bit at or after b (below n) of the bitmap w that is want (1 or 0), or n. */
static inline uint64_t memdiff__find_bit(const uint64_t *w, uint64_t b, uint64_t n, int want)
{
    while (b < n) {
        uint64_t x = w[b / 64];
        if (!want)
            x = ~x;
        x &= ~UINT64_C(0) << (b % 64);
        if (x) {
            uint64_t at = b / 64 * 64 + memdiff__ctz64(x);
            return at < n ? at : n;
        }
        b = (b / 64 + 1) * 64;
    }
    return n;
}

/* The end of the stretch v[i..) that goes on from v[i] by step: the first k > i (at most n)
 * with v[k] != v[i] + (k - i) * step (step 1 for consecutive frames or pagemap entries, 0 for
 * repeats, UINT64_MAX for descending). The tight loop of dense memory, shared by the backends'
 * decoding and the core's page facts: eight values a test where the compiler has vector types
 * (two to a 128-bit register: SSE2 on any x86-64, NEON on arm64), then four, with no branch
 * among them. On a recorded 1 GiB process's pagemap, 0.49 -> 0.40 ns an entry. */
static inline size_t memdiff__stretch_end(const uint64_t *v, size_t i, size_t n, uint64_t step)
{
    size_t k = i + 1;
    uint64_t x = v[i] + step; /* the value expected at k */
    /* Memory the allocator handed out piecemeal is mostly stretches of one to eight pages: a
     * few plain tests end those before the vector loop's setup would cost more than they do. */
    for (size_t probe = k + 4 < n ? k + 4 : n; k < probe; k++, x += step)
        if (v[k] != x)
            return k;
#if defined(__GNUC__)
    typedef uint64_t memdiff__u64x2 __attribute__((vector_size(16)));
    memdiff__u64x2 e0 = {x, x + step}, e1 = e0 + 2 * step, e2 = e0 + 4 * step,
                   e3 = e0 + 6 * step;
    for (; k + 8 <= n; k += 8) {
        memdiff__u64x2 a, b, c, d;
        memcpy(&a, v + k, sizeof a);
        memcpy(&b, v + k + 2, sizeof b);
        memcpy(&c, v + k + 4, sizeof c);
        memcpy(&d, v + k + 6, sizeof d);
        memdiff__u64x2 diff = (a ^ e0) | (b ^ e1) | (c ^ e2) | (d ^ e3);
        if (diff[0] | diff[1])
            break;
        e0 += 8 * step;
        e1 += 8 * step;
        e2 += 8 * step;
        e3 += 8 * step;
    }
    x = e0[0];
#endif
    for (; k + 4 <= n; k += 4, x += 4 * step)
        if ((v[k] ^ x) | (v[k + 1] ^ (x + step)) | (v[k + 2] ^ (x + 2 * step)) |
            (v[k + 3] ^ (x + 3 * step)))
            break;
    for (; k < n && v[k] == x; k++)
        x += step;
    return k;
}

#endif /* MEMDIFF_BASE_BITS_H */
