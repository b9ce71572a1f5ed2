/*
 * file_common.c - what the snapshot file writer (file_write.c) and reader (file_read.c) both
 * call: the checksum; and the growing write buffer of the encoders (the timeline's use both). A
 * file of its own so that neither of the two has to call the other for it (file_format.h: who
 * calls whom). The message for a file that cannot be opened is
 * memdiff__file_open_error() (base/error.c), shared with the POSIX backend.
 */
#include <string.h>

#include "file_format.h"

/* Nibble-table CRC-32 (polynomial 0xEDB88320 reflected): 16 constants instead of 256, no
 * initialisation to race on, fast enough (hundreds of MB/s) for files of a few MB. */
uint32_t memdiff__crc32(uint32_t crc, const void *data, size_t n)
{
    static const uint32_t table[16] = {
        0x00000000u, 0x1DB71064u, 0x3B6E20C8u, 0x26D930ACu, 0x76DC4190u, 0x6B6B51F4u,
        0x4DB26158u, 0x5005713Cu, 0xEDB88320u, 0xF00F9344u, 0xD6D6A3E8u, 0xCB61B38Cu,
        0x9B64C2B0u, 0x86D3D2D4u, 0xA00AE278u, 0xBDBDF21Cu,
    };
    const unsigned char *p = data;
    crc = ~crc;
    for (size_t i = 0; i < n; i++) {
        crc ^= p[i];
        crc = (crc >> 4) ^ table[crc & 15u];
        crc = (crc >> 4) ^ table[crc & 15u];
    }
    return ~crc;
}

void memdiff__wbuf_put(memdiff__wbuf *b, const void *data, size_t n)
{
    if (b->failed)
        return;
    if (n > b->cap - b->len) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap - b->len < n) {
            if (cap > SIZE_MAX / 2) {
                b->failed = memdiff__set_error(MEMDIFF_ENOMEM, "encoding: too large");
                return;
            }
            cap *= 2;
        }
        unsigned char *p = memdiff__arena_grow_raw(b->arena, b->p, b->cap, cap);
        if (!p) {
            b->failed = memdiff__set_error(MEMDIFF_ENOMEM, "encoding: out of memory");
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    if (n)
        memcpy(b->p + b->len, data, n);
    b->len += n;
}

unsigned memdiff__varint_encode(unsigned char *out, uint64_t v)
{
    unsigned n = 0;
    do {
        out[n] = (unsigned char)((v & 0x7F) | (v > 0x7F ? 0x80 : 0));
        v >>= 7;
        n++;
    } while (v);
    return n;
}

void memdiff__wbuf_varint(memdiff__wbuf *b, uint64_t v)
{
    unsigned char tmp[10];
    memdiff__wbuf_put(b, tmp, memdiff__varint_encode(tmp, v));
}
