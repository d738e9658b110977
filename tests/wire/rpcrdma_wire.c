/*
 * rpcrdma_wire: RPC-over-RDMA transport headers (RFC 8166) and CM
 * private data (RFC 8797) to hex and back with src/rpcrdma/'s codecs,
 * for tests/wire/test_tshark_rpcordma.sh.
 *
 *   rpcrdma_wire enc KEY=VALUE...    header to hex
 *   rpcrdma_wire dec HEX             hex to the KEY=VALUE line
 *   rpcrdma_wire cm R SEND RECV      RFC 8797 message to hex
 *   rpcrdma_wire cmdec [--mpa2] HEX  private data (with --mpa2, raw MPA
 *                                    private data that opens with the
 *                                    RFC 6581 word) to its fields
 *
 * The KEY=VALUE line, one header:
 *   xid=0x.. vers=N credit=N proc=N reads=R writes=W reply=P   (0, 1)
 *   xid=0x.. vers=N credit=N proc=4 err=1 low=N high=N         (ERR_VERS)
 *   xid=0x.. vers=N credit=N proc=4 err=2                      (ERR_CHUNK)
 * R: "-" or read segments "position:handle:length:offset" joined by
 * ","; W: "-" or Write chunks "{seg,seg}" one after another ("{}" is an
 * empty chunk), seg "handle:length:offset"; P: "-" or one "{...}".
 * Handles and offsets print in hex, positions and lengths in decimal;
 * input numbers may be either (strtoull base 0).  dec prints exactly
 * this form and, for RDMA_MSG and RDMA_NOMSG, " hdr_len=N" after it,
 * so that dec(enc(line)) is line and that; a
 * header that does not decode prints "error=NAME at=OFFSET
 * responder=ACTION".
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rpcrdma_cm.h"
#include "rpcrdma_hdr.h"

#define MAXS 64

static void die(const char *what, const char *arg)
{
	fprintf(stderr, "rpcrdma_wire: %s: %s\n", what, arg);
	exit(2);
}

static uint64_t num(const char *s, const char *whole)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s || (*end && *end != ':' && *end != ',' &&
				  *end != '}'))
		die("bad number in", whole);
	return v;
}

/* "h:l:o" at *p; advances past it. */
static const char *parse_seg(const char *p, struct uiw_rpcrdma_seg *s,
			     const char *whole)
{
	s->handle = (uint32_t)num(p, whole);
	if (!(p = strchr(p, ':')))
		die("segment without length", whole);
	s->length = (uint32_t)num(++p, whole);
	if (!(p = strchr(p, ':')))
		die("segment without offset", whole);
	s->offset = num(++p, whole);
	return p + strcspn(p, ",}");
}

/* "{seg,seg}" into seg[*n..]; returns the count. */
static const char *parse_chunk(const char *p, struct uiw_rpcrdma_seg *seg,
			       uint32_t *n, const char *whole)
{
	if (*p++ != '{')
		die("chunk without {", whole);
	while (*p != '}') {
		if (*n == MAXS)
			die("too many segments", whole);
		p = parse_seg(p, &seg[(*n)++], whole);
		if (*p == ',')
			p++;
		else if (*p != '}')
			die("bad chunk", whole);
	}
	return p + 1;
}

static int cmd_enc(int argc, char **argv)
{
	static struct uiw_rpcrdma_read_seg rs[MAXS];
	static struct uiw_rpcrdma_seg ws[MAXS], ps[MAXS];
	static struct uiw_rpcrdma_chunk wc[MAXS];
	struct uiw_rpcrdma_hdr h = { .vers = 1 };
	static uint8_t out[8192];
	enum uiw_rpcrdma_err e;
	const char *v, *p;
	size_t n, i;
	int a;

	h.read_seg = rs;
	h.write_seg = ws;
	h.write_chunk = wc;
	h.reply_seg = ps;
	for (a = 0; a < argc; a++) {
		if (!(v = strchr(argv[a], '=')))
			die("not KEY=VALUE", argv[a]);
		v++;
		if (!strncmp(argv[a], "xid=", 4)) {
			h.xid = (uint32_t)num(v, argv[a]);
		} else if (!strncmp(argv[a], "vers=", 5)) {
			h.vers = (uint32_t)num(v, argv[a]);
		} else if (!strncmp(argv[a], "credit=", 7)) {
			h.credit = (uint32_t)num(v, argv[a]);
		} else if (!strncmp(argv[a], "proc=", 5)) {
			h.proc = (uint32_t)num(v, argv[a]);
		} else if (!strncmp(argv[a], "err=", 4)) {
			h.err = (uint32_t)num(v, argv[a]);
		} else if (!strncmp(argv[a], "low=", 4)) {
			h.vers_low = (uint32_t)num(v, argv[a]);
		} else if (!strncmp(argv[a], "high=", 5)) {
			h.vers_high = (uint32_t)num(v, argv[a]);
		} else if (!strncmp(argv[a], "reads=", 6)) {
			for (p = v; strcmp(p, "-") && *p;) {
				if (h.nread_seg == MAXS)
					die("too many read segments", argv[a]);
				rs[h.nread_seg].position = (uint32_t)num(p, argv[a]);
				if (!(p = strchr(p, ':')))
					die("read segment without handle", argv[a]);
				p = parse_seg(p + 1, &rs[h.nread_seg++].target,
					      argv[a]);
				if (*p == ',')
					p++;
			}
		} else if (!strncmp(argv[a], "writes=", 7)) {
			for (p = v; strcmp(p, "-") && *p;) {
				if (h.nwrite_chunk == MAXS)
					die("too many write chunks", argv[a]);
				wc[h.nwrite_chunk].first = h.nwrite_seg;
				p = parse_chunk(p, ws, &h.nwrite_seg, argv[a]);
				wc[h.nwrite_chunk].nseg =
					h.nwrite_seg - wc[h.nwrite_chunk].first;
				h.nwrite_chunk++;
			}
		} else if (!strncmp(argv[a], "reply=", 6)) {
			h.reply_present = strcmp(v, "-") != 0;
			if (h.reply_present &&
			    *parse_chunk(v, ps, &h.nreply_seg, argv[a]))
				die("one Reply chunk only", argv[a]);
		} else {
			die("unknown key", argv[a]);
		}
	}
	if ((e = uiw_rpcrdma_encode(&h, out, sizeof(out), &n)))
		die("cannot encode", uiw_rpcrdma_strerror(e));
	for (i = 0; i < n; i++)
		printf("%02x", out[i]);
	putchar('\n');
	return 0;
}

static size_t unhex(const char *s, uint8_t *out, size_t cap)
{
	size_t n = 0;
	unsigned v;

	if (strlen(s) % 2 || strlen(s) / 2 > cap)
		die("bad hex length", s);
	for (; *s; s += 2) {
		if (sscanf(s, "%2x", &v) != 1)
			die("bad hex", s);
		out[n++] = (uint8_t)v;
	}
	return n;
}

static void print_seg(const struct uiw_rpcrdma_seg *s)
{
	printf("0x%x:%u:0x%llx", s->handle, s->length,
	       (unsigned long long)s->offset);
}

static void print_chunk(const struct uiw_rpcrdma_seg *s, uint32_t n)
{
	uint32_t i;

	putchar('{');
	for (i = 0; i < n; i++) {
		if (i)
			putchar(',');
		print_seg(&s[i]);
	}
	putchar('}');
}

static int cmd_dec(const char *hex)
{
	static struct uiw_rpcrdma_read_seg rs[MAXS];
	static struct uiw_rpcrdma_seg ws[MAXS], ps[MAXS];
	static struct uiw_rpcrdma_chunk rc[MAXS], wc[MAXS];
	static uint8_t buf[8192];
	struct uiw_rpcrdma_space sp = { rs, MAXS, rc, MAXS, ws, MAXS, wc,
					MAXS, ps, MAXS };
	struct uiw_rpcrdma_hdr h;
	enum uiw_rpcrdma_err e;
	size_t n = unhex(hex, buf, sizeof(buf));
	uint32_t i;

	e = uiw_rpcrdma_decode(buf, n, &sp, &h);
	if (e) {
		printf("error=%s at=%zu responder=%s\n", uiw_rpcrdma_err_name(e),
		       h.bad_off, uiw_rpcrdma_act_name(uiw_rpcrdma_action(
				UIW_RPCRDMA_RESPONDER, e, &h)));
		return 0;
	}
	printf("xid=0x%08x vers=%u credit=%u proc=%u", h.xid, h.vers,
	       h.credit, h.proc);
	if (h.proc == UIW_RDMA_ERROR) {
		printf(" err=%u", h.err);
		if (h.err == UIW_RPCRDMA_ERR_VERS)
			printf(" low=%u high=%u", h.vers_low, h.vers_high);
		printf("\n");
		return 0;
	}
	printf(" reads=");
	for (i = 0; i < h.nread_seg; i++) {
		printf("%s%u:", i ? "," : "", h.read_seg[i].position);
		print_seg(&h.read_seg[i].target);
	}
	printf("%s writes=", h.nread_seg ? "" : "-");
	for (i = 0; i < h.nwrite_chunk; i++)
		print_chunk(h.write_seg + h.write_chunk[i].first,
			    h.write_chunk[i].nseg);
	printf("%s reply=", h.nwrite_chunk ? "" : "-");
	if (h.reply_present)
		print_chunk(h.reply_seg, h.nreply_seg);
	else
		putchar('-');
	printf(" hdr_len=%zu\n", h.hdr_len);
	return 0;
}

static int cmd_cm(char **argv)
{
	uint8_t out[UIW_RPCRDMA_CM_LEN];
	int i;

	if (uiw_rpcrdma_cm_encode(out, num(argv[0], argv[0]) != 0,
				  (uint32_t)num(argv[1], argv[1]),
				  (uint32_t)num(argv[2], argv[2])) < 0)
		die("sizes under 1024", argv[1]);
	for (i = 0; i < UIW_RPCRDMA_CM_LEN; i++)
		printf("%02x", out[i]);
	putchar('\n');
	return 0;
}

static int cmd_cmdec(bool mpa2, const char *hex)
{
	static uint8_t buf[1024];
	struct uiw_rpcrdma_cm cm;
	const uint8_t *pd = buf;
	size_t n = unhex(hex, buf, sizeof(buf));

	if (mpa2 && !(pd = uiw_rpcrdma_cm_skip_mpa_v2(buf, n, &n)))
		die("no room for the RFC 6581 word in", hex);
	uiw_rpcrdma_cm_decode(pd, n, &cm);
	printf("present=%d rinv=%d send=%u recv=%u offset=%zu\n", cm.present,
	       cm.remote_inv, cm.send_size, cm.recv_size, cm.offset);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 2 && !strcmp(argv[1], "enc"))
		return cmd_enc(argc - 2, argv + 2);
	if (argc == 3 && !strcmp(argv[1], "dec"))
		return cmd_dec(argv[2]);
	if (argc == 5 && !strcmp(argv[1], "cm"))
		return cmd_cm(argv + 2);
	if (argc == 3 && !strcmp(argv[1], "cmdec"))
		return cmd_cmdec(false, argv[2]);
	if (argc == 4 && !strcmp(argv[1], "cmdec") &&
	    !strcmp(argv[2], "--mpa2"))
		return cmd_cmdec(true, argv[3]);
	fprintf(stderr, "usage: rpcrdma_wire enc KEY=VALUE... | dec HEX | "
		"cm R SEND RECV | cmdec [--mpa2] HEX\n");
	return 2;
}
