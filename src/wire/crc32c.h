/* CRC32c (Castagnoli) as MPA uses it (RFC 5044 §4.4, iSCSI digests),
 * computed with ISA-L's crc32_iscsi. */
#ifndef UIW_WIRE_CRC32C_H
#define UIW_WIRE_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* Running state: start with UIW_CRC32C_INIT, feed pieces in stream order
 * with uiw_crc32c_update (any split gives the same result), finish with
 * uiw_crc32c_final (the complement: ISA-L's crc32_iscsi neither
 * complements on entry nor on exit). */
#define UIW_CRC32C_INIT 0xffffffffu
uint32_t uiw_crc32c_update(uint32_t state, const void *buf, size_t len);
uint32_t uiw_crc32c_final(uint32_t state);
/* One-shot: the CRC32c value of buf. */
uint32_t uiw_crc32c(const void *buf, size_t len);
/* The four CRC field octets as they appear on the wire: the value least
 * significant octet first (as iSCSI; RFC 5044 §4.4 Figures 5 and 6,
 * RFC 3720 B.4, siw and tshark agree; why RFC 3720 §12.1's wording says
 * the same is explained in crc32c.c). */
void uiw_crc32c_put(uint8_t out[4], uint32_t crc);
uint32_t uiw_crc32c_get(const uint8_t in[4]);

#endif
