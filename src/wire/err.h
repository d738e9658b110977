/*
 * The one error vocabulary: a protocol error is the Terminate control
 * triple of RFC 5040 §4.8 (Layer, Error Type, Error Code), with the DDP
 * values of RFC 5041 §7, the MPA values of RFC 5044 §8 / RFC 6581 §8 and
 * the RDMAP values of RFC 5040 §4.8 and RFC 7306 §8.  The same value
 * decides the Terminate message, the completion status, the QP state
 * change and the log line; the table of names and statuses is in err.c.
 */
#ifndef UIW_WIRE_ERR_H
#define UIW_WIRE_ERR_H

#include <stdbool.h>
#include <stdint.h>

/* 0 is "no error"; bit 16 marks a valid error so that 0/0/0 is expressible. */
typedef uint32_t uiw_err_t;
#define UIW_OK 0u
#define UIW_ERR(layer, etype, ecode) \
	((uiw_err_t)(0x10000u | ((uint32_t)(layer) << 12) | \
		     ((uint32_t)(etype) << 8) | (uint32_t)(ecode)))
#define UIW_ERR_LAYER(e) (((e) >> 12) & 0xfu)
#define UIW_ERR_ETYPE(e) (((e) >> 8) & 0xfu)
#define UIW_ERR_ECODE(e) ((e) & 0xffu)

/* RDMAP layer (0) */
#define UIW_E_RDMAP_LOCAL_CATA          UIW_ERR(0, 0, 0x00)
#define UIW_E_RDMAP_INVALID_STAG        UIW_ERR(0, 1, 0x00)
#define UIW_E_RDMAP_BASE_BOUNDS         UIW_ERR(0, 1, 0x01)
#define UIW_E_RDMAP_ACCESS              UIW_ERR(0, 1, 0x02)
#define UIW_E_RDMAP_STAG_NOT_ASSOC      UIW_ERR(0, 1, 0x03)
#define UIW_E_RDMAP_TO_WRAP             UIW_ERR(0, 1, 0x04)
#define UIW_E_RDMAP_PROT_CANT_INV       UIW_ERR(0, 1, 0x09)
#define UIW_E_RDMAP_PROT_UNSPEC         UIW_ERR(0, 1, 0xff)
#define UIW_E_RDMAP_INVALID_VERSION     UIW_ERR(0, 2, 0x05)
#define UIW_E_RDMAP_UNEXPECTED_OPCODE   UIW_ERR(0, 2, 0x06)
#define UIW_E_RDMAP_CATA_STREAM         UIW_ERR(0, 2, 0x07)
#define UIW_E_RDMAP_CATA_GLOBAL         UIW_ERR(0, 2, 0x08)
#define UIW_E_RDMAP_OP_CANT_INV         UIW_ERR(0, 2, 0x09)
#define UIW_E_RDMAP_OP_UNSPEC           UIW_ERR(0, 2, 0xff)

/* DDP layer (1), RFC 5041 §7 */
#define UIW_E_DDP_LOCAL_CATA            UIW_ERR(1, 0, 0x00)
#define UIW_E_DDP_T_INVALID_STAG        UIW_ERR(1, 1, 0x00)
#define UIW_E_DDP_T_BASE_BOUNDS         UIW_ERR(1, 1, 0x01)
#define UIW_E_DDP_T_STAG_NOT_ASSOC      UIW_ERR(1, 1, 0x02)
#define UIW_E_DDP_T_TO_WRAP             UIW_ERR(1, 1, 0x03)
#define UIW_E_DDP_T_INVALID_VERSION     UIW_ERR(1, 1, 0x04)
#define UIW_E_DDP_U_INVALID_QN          UIW_ERR(1, 2, 0x01)
#define UIW_E_DDP_U_MSN_NO_BUF          UIW_ERR(1, 2, 0x02)
#define UIW_E_DDP_U_MSN_RANGE           UIW_ERR(1, 2, 0x03)
#define UIW_E_DDP_U_INVALID_MO          UIW_ERR(1, 2, 0x04)
#define UIW_E_DDP_U_TOO_LONG            UIW_ERR(1, 2, 0x05)
#define UIW_E_DDP_U_INVALID_VERSION     UIW_ERR(1, 2, 0x06)

/* LLP layer (2): MPA, RFC 5044 §8 and RFC 6581 §8 */
#define UIW_E_MPA_CLOSED                UIW_ERR(2, 0, 0x01)
#define UIW_E_MPA_CRC                   UIW_ERR(2, 0, 0x02)
#define UIW_E_MPA_MARKER                UIW_ERR(2, 0, 0x03)
#define UIW_E_MPA_INVALID_FRAME         UIW_ERR(2, 0, 0x04)
#define UIW_E_MPA_LOCAL_CATA            UIW_ERR(2, 0, 0x05)
#define UIW_E_MPA_INSUFFICIENT_IRD      UIW_ERR(2, 0, 0x06)
#define UIW_E_MPA_NO_MATCHING_RTR       UIW_ERR(2, 0, 0x07)

/* Name of an error ("DDP untagged buffer error: invalid QN"); never NULL.
 * A triple no RFC defines reads "layer 1 etype 2 code 0x09" (kept in a
 * per-thread buffer until the next such call). */
const char *uiw_err_str(uiw_err_t e);
/* True when e is one of the triples above.  For a local catastrophic
 * error (RDMAP or DDP, error type 0) any error code counts, as RFC 5040
 * Figure 9 allows. */
bool uiw_err_known(uiw_err_t e);

/* Completion status (enum uiw_wc_status) that a local work request gets
 * when the stream ends because of e.  remote: e came in a Terminate from
 * the peer (REM_* statuses) rather than being detected here.  Protection
 * errors give LOC_PROT_ERR / REM_ACCESS_ERR, "too long" and "invalid MO"
 * LOC_LEN_ERR / REM_INV_REQ_ERR, bad versions and opcodes BAD_RESP_ERR /
 * REM_INV_REQ_ERR, catastrophic ones LOC_QP_OP_ERR / REM_OP_ERR, every
 * LLP error FATAL_ERR; UIW_OK gives SUCCESS.  The table is in err.c. */
int uiw_err_wc_status(uiw_err_t e, int remote);

#endif
