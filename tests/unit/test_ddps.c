/*
 * DDP over SCTP (RFC 5043, with RFC 6581 §7).
 *
 * The codec (src/wire/ddps.c): every Function Code both ways, the
 * IRD/ORD word of the enhanced codes, the bounds on private data, and
 * DDP-SSN serial arithmetic (§5.2.1, §10).
 *
 * The layer (src/llp/ddps.c) through the connection manager and the
 * engine, carried by the in-memory SCTP carrier of fake_sctp.h put in
 * place of the user-space backend: connections over UIW_LLP_SCTP_UDP
 * made, refused and ended as §6 says, data put back in DDP-SSN order
 * whatever order the carrier delivers it in, and the exact messages the
 * layer sends when the peer breaks the rules, read from the carrier's
 * tap.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <pthread.h>
#include <time.h>
#include <netinet/in.h>
#include <cmocka.h>

#include <uiwarp/uiwarp.h>
#include <uiwarp/cm.h>
#include "llp/ddps.h"
#include "rnic/framing.h"
#include "rt/rt.h"
#include "wire/ddp.h"
#include "wire/ddps.h"
#include "unit/fake_sctp.h"

#define WAIT_MS 10000
#define MIB (1u << 20)

/* ====================================================================== */
/* The codec                                                              */
/* ====================================================================== */

static const uint16_t all_fc[] = {
	UIW_DDPS_INITIATE, UIW_DDPS_ACCEPT, UIW_DDPS_REJECT,
	UIW_DDPS_TERMINATE, UIW_DDPS_E_INITIATE, UIW_DDPS_E_ACCEPT,
	UIW_DDPS_E_REJECT,
};

static void fill_pd(uint8_t *p, size_t n, unsigned seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = (uint8_t)(i * 7 + seed);
}

/* Every code, with private data of several lengths (none for a
 * Terminate): the octets are DDP-SSN, Function Code (both big-endian),
 * the word for the enhanced codes, then the private data (RFC 5043
 * §5.2.3, RFC 6581 §7); decoding gives back each field. */
static void test_codec_roundtrip(void **state)
{
	static const uint16_t lens[] = { 0, 1, 17, 508 };
	struct uiw_mpa_v2 v2 = { .ird = 0x1234 & UIW_MPA_V2_IRD_MAX,
				 .ord = 7 };
	uint8_t out[UIW_DDPS_CTL_MAX], pd[UIW_DDPS_PD_MAX];
	struct uiw_ddps_ctl c;
	const char *why;
	size_t f, l;

	(void)state;
	fill_pd(pd, sizeof(pd), 3);
	for (f = 0; f < sizeof(all_fc) / sizeof(all_fc[0]); f++) {
		uint16_t fc = all_fc[f];
		bool word = uiw_ddps_fc_has_v2(fc);

		assert_int_equal(word, fc >= UIW_DDPS_E_INITIATE);
		assert_string_not_equal(uiw_ddps_fc_name(fc), "unknown");
		for (l = 0; l < sizeof(lens) / sizeof(lens[0]); l++) {
			uint16_t n = lens[l], ssn = (uint16_t)(0xfffe + l);
			int len;

			if (fc == UIW_DDPS_TERMINATE && n)
				continue;
			len = uiw_ddps_ctl_encode(out, ssn, fc, &v2, pd, n);
			assert_int_equal(len, 4 + (word ? 4 : 0) + n);
			assert_int_equal(out[0], ssn >> 8);
			assert_int_equal(out[1], ssn & 0xff);
			assert_int_equal(out[2], 0);
			assert_int_equal(out[3], fc);
			if (word) {
				/* RFC 6581 §9.1: IRD then ORD, 14 bits each
				 * below the A/B and C/D flags */
				assert_int_equal(out[4], 0x12);
				assert_int_equal(out[5], 0x34);
				assert_int_equal(out[6], 0);
				assert_int_equal(out[7], 7);
			}
			assert_memory_equal(out + len - n, pd, n);
			why = NULL;
			assert_int_equal(uiw_ddps_ctl_decode(out, (size_t)len,
							     &c, &why), 0);
			assert_null(why);
			assert_int_equal(c.ssn, ssn);
			assert_int_equal(c.fc, fc);
			assert_int_equal(c.enhanced, word);
			assert_int_equal(c.has_v2, word);
			if (word) {
				assert_int_equal(c.v2.ird, v2.ird);
				assert_int_equal(c.v2.ord, v2.ord);
				assert_false(c.v2.p2p);
			}
			assert_int_equal(c.pd_len, n);
			assert_ptr_equal(c.pd, out + len - n);
		}
	}
}

/* RFC 5043 §5.2.3: at most 512 octets of private data; with the word of
 * RFC 6581 §7 counted in them, 508 of the ULP's. */
static void test_codec_pd_bounds(void **state)
{
	struct uiw_mpa_v2 v2 = { .ird = 1, .ord = 1 };
	uint8_t out[UIW_DDPS_CTL_MAX + 8], pd[UIW_DDPS_PD_MAX + 1], in[600];
	struct uiw_ddps_ctl c;
	const char *why;

	(void)state;
	fill_pd(pd, sizeof(pd), 9);
	assert_int_equal(uiw_ddps_ctl_encode(out, 1, UIW_DDPS_INITIATE, NULL,
					     pd, 512), 516);
	assert_int_equal(uiw_ddps_ctl_encode(out, 1, UIW_DDPS_REJECT, NULL,
					     pd, 513), -EMSGSIZE);
	assert_int_equal(uiw_ddps_ctl_encode(out, 1, UIW_DDPS_E_INITIATE,
					     &v2, pd, 508), 516);
	assert_int_equal(uiw_ddps_ctl_encode(out, 1, UIW_DDPS_E_ACCEPT,
					     &v2, pd, 509), -EMSGSIZE);
	assert_int_equal(uiw_ddps_ctl_encode(out, 1, UIW_DDPS_E_REJECT,
					     &v2, pd, 509), -EMSGSIZE);
	/* and decoding: 512 octets after the header pass, 513 do not */
	memset(in, 0, sizeof(in));
	in[3] = UIW_DDPS_ACCEPT;
	assert_int_equal(uiw_ddps_ctl_decode(in, 4 + 512, &c, &why), 0);
	assert_int_equal(c.pd_len, 512);
	why = NULL;
	assert_int_equal(uiw_ddps_ctl_decode(in, 4 + 513, &c, &why), -EPROTO);
	assert_non_null(why);
	in[3] = UIW_DDPS_E_ACCEPT;
	assert_int_equal(uiw_ddps_ctl_decode(in, 4 + 512, &c, &why), 0);
	assert_int_equal(c.pd_len, 508);
	assert_int_equal(uiw_ddps_ctl_decode(in, 4 + 513, &c, &why), -EPROTO);
}

/* RFC 5043 §5.2.3: a Session Terminate carries no private data, neither
 * when we build one nor when the peer's does. */
static void test_codec_terminate(void **state)
{
	uint8_t out[UIW_DDPS_CTL_MAX], pd[4] = { 1, 2, 3, 4 };
	uint8_t in[5] = { 0, 9, 0, UIW_DDPS_TERMINATE, 0x55 };
	struct uiw_ddps_ctl c;
	const char *why = NULL;

	(void)state;
	assert_int_equal(uiw_ddps_ctl_encode(out, 0, UIW_DDPS_TERMINATE, NULL,
					     pd, 1), -EINVAL);
	assert_int_equal(uiw_ddps_ctl_encode(out, 9, UIW_DDPS_TERMINATE, NULL,
					     NULL, 0), 4);
	assert_memory_equal(out, in, 4);
	assert_int_equal(uiw_ddps_ctl_decode(in, 4, &c, &why), 0);
	assert_int_equal(c.fc, UIW_DDPS_TERMINATE);
	assert_int_equal(c.ssn, 9);
	assert_int_equal(uiw_ddps_ctl_decode(in, 5, &c, &why), -EPROTO);
	assert_non_null(strstr(why, "Terminate"));
}

/* Shorter than DDP-SSN and Function Code; an enhanced code without its
 * word; unknown codes both ways; an enhanced code without v2. */
static void test_codec_malformed(void **state)
{
	static const uint16_t bad[] = { 0, 8, 0x100, 0xffff };
	uint8_t in[8] = { 0, 0, 0, UIW_DDPS_E_INITIATE, 0, 1, 0, 1 };
	uint8_t out[UIW_DDPS_CTL_MAX];
	struct uiw_ddps_ctl c;
	const char *why;
	size_t n, i;

	(void)state;
	for (n = 0; n < 4; n++) {
		why = NULL;
		assert_int_equal(uiw_ddps_ctl_decode(in, n, &c, &why),
				 -EPROTO);
		assert_non_null(why);
	}
	for (n = 4; n < 8; n++)
		assert_int_equal(uiw_ddps_ctl_decode(in, n, &c, &why),
				 -EPROTO);
	assert_int_equal(uiw_ddps_ctl_decode(in, 8, &c, &why), 0);
	assert_int_equal(c.v2.ird, 1);
	assert_int_equal(c.pd_len, 0);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		in[2] = (uint8_t)(bad[i] >> 8);
		in[3] = (uint8_t)bad[i];
		why = NULL;
		assert_int_equal(uiw_ddps_ctl_decode(in, 8, &c, &why),
				 -EPROTO);
		assert_non_null(strstr(why, "unknown"));
		assert_int_equal(uiw_ddps_ctl_encode(out, 0, bad[i], NULL,
						     NULL, 0), -EINVAL);
		assert_string_equal(uiw_ddps_fc_name(bad[i]), "unknown");
		assert_false(uiw_ddps_fc_has_v2(bad[i]));
	}
	assert_int_equal(uiw_ddps_ctl_encode(out, 0, UIW_DDPS_E_ACCEPT, NULL,
					     NULL, 0), -EINVAL);
}

/* RFC 5043 §10 with RFC 1982 arithmetic: 0 next, 1..32767 ahead,
 * 32768..65535 behind, across the wrap. */
static void test_ssn_serial(void **state)
{
	static const uint16_t nexts[] = { 0, 1, 0x7fff, 0x8000, 0xfffe,
					  0xffff };
	uint8_t b[2];
	size_t i;

	(void)state;
	uiw_ddps_put_ssn(b, 0xa1b2);
	assert_int_equal(b[0], 0xa1);
	assert_int_equal(b[1], 0xb2);
	assert_int_equal(uiw_ddps_ssn(b), 0xa1b2);
	for (i = 0; i < sizeof(nexts) / sizeof(nexts[0]); i++) {
		uint16_t n = nexts[i];

		assert_int_equal(uiw_ddps_ssn_ahead(n, n), 0);
		assert_false(uiw_ddps_ssn_behind(n, n));
		assert_int_equal(uiw_ddps_ssn_ahead((uint16_t)(n + 1), n), 1);
		assert_false(uiw_ddps_ssn_behind((uint16_t)(n + 32767), n));
		assert_int_equal(uiw_ddps_ssn_ahead((uint16_t)(n + 32767), n),
				 32767);
		assert_true(uiw_ddps_ssn_behind((uint16_t)(n + 32768), n));
		assert_true(uiw_ddps_ssn_behind((uint16_t)(n - 1), n));
	}
	assert_int_equal(uiw_ddps_ssn_ahead(0, 0xffff), 1);
	assert_int_equal(uiw_ddps_ssn_ahead(5, 0xfffb), 10);
	assert_true(uiw_ddps_ssn_behind(0xffff, 0));
	assert_true(uiw_ddps_ssn_behind(0xfff0, 3));
}

/* ====================================================================== */
/* The carrier itself (fake_sctp.h), through sctp.h                       */
/* ====================================================================== */

/* One end as its upcalls saw it (they run on the stack's thread). */
struct fc_end {
	pthread_mutex_t m;
	pthread_cond_t c;
	struct uiw_sctp_assoc *a;
	struct uiw_sctp_info info;
	int ups, downs, down_err, writables, drys, nmsg;
	uint32_t seq[128];
	uint16_t sid[128];
};

static struct uiw_sctp_stack *fc_st;

static void fc_note(struct fc_end *e, int *field)
{
	pthread_mutex_lock(&e->m);
	(*field)++;
	pthread_cond_broadcast(&e->c);
	pthread_mutex_unlock(&e->m);
}

static void fc_up(void *ctx, struct uiw_sctp_assoc *a,
		  const struct uiw_sctp_info *info)
{
	struct fc_end *e = ctx;

	pthread_mutex_lock(&e->m);
	e->a = a;
	e->info = *info;
	pthread_mutex_unlock(&e->m);
	fc_note(e, &e->ups);
}

static void fc_msg(void *ctx, struct uiw_sctp_assoc *a, uint16_t sid,
		   uint32_t ppid, void *buf, size_t len)
{
	struct fc_end *e = ctx;

	pthread_mutex_lock(&e->m);
	if (e->nmsg < 128 && len >= 4) {
		e->seq[e->nmsg] = ntohl(*(const uint32_t *)buf);
		e->sid[e->nmsg] = sid;
	}
	pthread_mutex_unlock(&e->m);
	uiw_sctp_buf_free(fc_st, buf);
	fc_note(e, &e->nmsg);
}

static void fc_writable(void *ctx, struct uiw_sctp_assoc *a)
{
	fc_note(ctx, &((struct fc_end *)ctx)->writables);
}

static void fc_dry(void *ctx, struct uiw_sctp_assoc *a)
{
	fc_note(ctx, &((struct fc_end *)ctx)->drys);
}

static void fc_down(void *ctx, struct uiw_sctp_assoc *a, int err)
{
	struct fc_end *e = ctx;

	pthread_mutex_lock(&e->m);
	e->a = NULL;
	e->down_err = err;
	pthread_mutex_unlock(&e->m);
	fc_note(e, &e->downs);
}

static const struct uiw_sctp_up fc_ups = {
	.up = fc_up, .msg = fc_msg, .writable = fc_writable, .dry = fc_dry,
	.down = fc_down,
};

static void fc_init(struct fc_end *e)
{
	memset(e, 0, sizeof(*e));
	pthread_mutex_init(&e->m, NULL);
	pthread_cond_init(&e->c, NULL);
}

/* Waits (bounded) until *field reaches want. */
static void fc_wait(struct fc_end *e, const int *field, int want)
{
	struct timespec dl;
	int rc = 0;

	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += WAIT_MS / 1000;
	pthread_mutex_lock(&e->m);
	while (*field < want && rc == 0)
		rc = pthread_cond_timedwait(&e->c, &e->m, &dl);
	pthread_mutex_unlock(&e->m);
	if (*field < want)
		fail_msg("carrier: %d upcalls of %d within %d ms", *field,
			 want, WAIT_MS);
}

/* What runs on the stack's thread. */
struct fc_op {
	enum { FC_LISTEN, FC_UNLISTEN, FC_CONNECT, FC_SEND, FC_BURST,
	       FC_DRY, FC_SHUTDOWN, FC_ABORT, FC_UNACKED } kind;
	struct fc_end *e;
	struct uiw_sctp_lsn *lsn;
	struct sockaddr_in sin;
	uint16_t sid;
	size_t len;
	uint32_t seq;
	int n;
};

static int fc_send1(struct uiw_sctp_assoc *a, uint16_t sid, size_t len,
		    uint32_t seq)
{
	uint8_t b[2048];
	struct iovec iov[2] = { { b, 4 }, { b + 4, len - 4 } };

	memset(b, 0x33, sizeof(b));
	*(uint32_t *)b = htonl(seq);
	return uiw_sctp_send(a, sid, 77, iov, 2);
}

static int fc_run(void *arg)
{
	struct fc_op *o = arg;
	struct sockaddr_storage ss;
	struct uiw_sctp_assoc *a;
	int i, r;

	switch (o->kind) {
	case FC_LISTEN:
		r = uiw_sctp_listen(fc_st, (struct sockaddr *)&o->sin,
				    sizeof(o->sin), 4, &fc_ups, o->e, &o->lsn);
		if (r == 0) {
			uiw_sctp_lsn_addr(o->lsn, &ss);
			memcpy(&o->sin, &ss, sizeof(o->sin));
		}
		return r;
	case FC_UNLISTEN:
		uiw_sctp_unlisten(o->lsn);
		return 0;
	case FC_CONNECT:
		return uiw_sctp_connect(fc_st, (struct sockaddr *)&o->sin,
					sizeof(o->sin), NULL, 0, 0, &fc_ups,
					o->e, &a);
	case FC_SEND:
		return fc_send1(o->e->a, o->sid, o->len, o->seq);
	case FC_BURST:
		/* sends until the carrier refuses: how many it took */
		for (i = 0; i < o->n; i++)
			if (fc_send1(o->e->a, o->sid, o->len, o->seq + i) < 0)
				break;
		return i;
	case FC_DRY:
		uiw_sctp_watch_dry(o->e->a);
		return 0;
	case FC_SHUTDOWN:
		uiw_sctp_shutdown(o->e->a);
		return 0;
	case FC_ABORT:
		uiw_sctp_abort(o->e->a);
		return 0;
	case FC_UNACKED:
		return uiw_sctp_unacked(o->e->a);
	}
	return -EINVAL;
}

static int fc_ptr(struct fc_op *o)
{
	return uiw_rt_call(uiw_sctp_stack_rt(fc_st), fc_run, o);
}

static int fc(struct fc_op o)
{
	return fc_ptr(&o);
}

/* A listener and one association to it: its ends' upcalls in srv and
 * cli; 3 messages of 400 octets then 64 of 8, each sent in one go. */
static void fc_session(struct fc_end *srv, struct fc_end *cli,
		       struct fc_op *lsn, uint32_t *order)
{
	int i;

	fc_init(srv);
	fc_init(cli);
	memset(lsn, 0, sizeof(*lsn));
	lsn->kind = FC_LISTEN;
	lsn->e = srv;
	lsn->sin.sin_family = AF_INET;
	lsn->sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(fc_ptr(lsn), 0);
	assert_int_not_equal(lsn->sin.sin_port, 0);
	assert_int_equal(fc((struct fc_op){ .kind = FC_CONNECT, .e = cli,
					    .sin = lsn->sin }), 0);
	fc_wait(srv, &srv->ups, 1);
	fc_wait(cli, &cli->ups, 1);
	/* queue_max 1000: taken while the peer's queue holds no more */
	assert_int_equal(fc((struct fc_op){ .kind = FC_BURST, .e = cli,
					    .len = 400, .n = 10 }), 3);
	fc_wait(cli, &cli->writables, 1);
	fc_wait(srv, &srv->nmsg, 3);
	assert_int_equal(fc((struct fc_op){ .kind = FC_BURST, .e = cli,
					    .sid = 3, .len = 8, .seq = 100,
					    .n = 64 }), 64);
	fc_wait(srv, &srv->nmsg, 67);
	for (i = 0; i < 64; i++) {
		order[i] = srv->seq[3 + i] - 100;
		assert_int_equal(srv->sid[3 + i], 3);
		/* shuffled within windows of 8, never across */
		assert_int_equal(order[i] / 8, (uint32_t)i / 8);
	}
}

static void test_fake_carrier(void **state)
{
	struct fake_sctp_cfg cfg = { .seed = 42, .window = 8,
				     .in_streams = 4, .out_streams = 6,
				     .maxseg = 600, .queue_max = 1000,
				     .unacked = 123 };
	struct fc_end srv, cli, c2, c3, srv2, cli2;
	struct fc_op lsn;
	uint32_t order[64], again[64];
	int i, moved = 0;

	(void)state;
	fake_sctp_configure(&cfg);
	assert_int_equal(uiw_sctp_stack_get(UIW_SCTP_USER, NULL, &fc_st), 0);
	assert_int_equal(fake_sctp_streams(), UIW_SCTP_STREAMS_DEF);
	fc_session(&srv, &cli, &lsn, order);
	for (i = 0; i < 64; i++)
		moved += order[i] != (uint32_t)i;
	assert_true(moved > 16);
	/* what each end learnt: unequal stream counts, the smaller usable */
	assert_true(cli.info.active);
	assert_false(srv.info.active);
	assert_int_equal(cli.info.in_streams, 4);
	assert_int_equal(cli.info.out_streams, 6);
	assert_int_equal(srv.info.in_streams, 6);
	assert_int_equal(srv.info.out_streams, 4);
	assert_int_equal(cli.info.streams, 4);
	assert_int_equal(srv.info.streams, 4);
	assert_int_equal(cli.info.maxseg, 600);
	assert_true(cli.info.peer_adapt_seen && srv.info.peer_adapt_seen);
	assert_int_equal(cli.info.peer_adapt, UIW_SCTP_ADAPT_DDP);
	assert_memory_equal(&srv.info.peer, &cli.info.local,
			    sizeof(struct sockaddr_in));
	/* the refusals of sctp.h */
	assert_int_equal(fc((struct fc_op){ .kind = FC_SEND, .e = &cli,
					    .len = 601 }), -EMSGSIZE);
	assert_int_equal(fc((struct fc_op){ .kind = FC_SEND, .e = &cli,
					    .sid = 4, .len = 8 }), -EINVAL);
	assert_int_equal(fc((struct fc_op){ .kind = FC_UNACKED, .e = &cli }),
			 123);
	/* dry once everything sent is delivered */
	assert_int_equal(fc((struct fc_op){ .kind = FC_DRY, .e = &cli }), 0);
	fc_wait(&cli, &cli.drys, 1);
	/* orderly: down 0 at both ends, and no sending meanwhile */
	assert_int_equal(fc((struct fc_op){ .kind = FC_SHUTDOWN, .e = &cli }),
			 0);
	fc_wait(&cli, &cli.downs, 1);
	fc_wait(&srv, &srv.downs, 1);
	assert_int_equal(cli.down_err, 0);
	assert_int_equal(srv.down_err, 0);
	/* ABORT: ours -ECONNABORTED, the peer's -ECONNRESET (the passive
	 * end's upcalls are the listener's: srv) */
	fc_init(&c2);
	assert_int_equal(fc((struct fc_op){ .kind = FC_CONNECT, .e = &c2,
					    .sin = lsn.sin }), 0);
	fc_wait(&srv, &srv.ups, 2);
	fc_wait(&c2, &c2.ups, 1);
	assert_int_equal(fc((struct fc_op){ .kind = FC_ABORT, .e = &c2 }), 0);
	fc_wait(&c2, &c2.downs, 1);
	fc_wait(&srv, &srv.downs, 2);
	assert_int_equal(c2.down_err, -ECONNABORTED);
	assert_int_equal(srv.down_err, -ECONNRESET);
	/* nobody listening: refused, never up */
	fc_init(&c3);
	lsn.sin.sin_port = htons((uint16_t)(ntohs(lsn.sin.sin_port) + 1));
	assert_int_equal(fc((struct fc_op){ .kind = FC_CONNECT, .e = &c3,
					    .sin = lsn.sin }), 0);
	fc_wait(&c3, &c3.downs, 1);
	assert_int_equal(c3.down_err, -ECONNREFUSED);
	assert_int_equal(c3.ups, 0);
	lsn.sin.sin_port = htons((uint16_t)(ntohs(lsn.sin.sin_port) - 1));
	assert_int_equal(fc((struct fc_op){ .kind = FC_UNLISTEN,
					    .lsn = lsn.lsn }), 0);
	assert_int_equal(fake_sctp_quiet(), 0);
	uiw_sctp_stack_put(fc_st);
	assert_int_equal(fake_sctp_streams(), -ENODEV);

	/* the same seed and the same sends: the same order */
	assert_int_equal(uiw_sctp_stack_get(UIW_SCTP_USER, NULL, &fc_st), 0);
	fc_session(&srv2, &cli2, &lsn, again);
	assert_memory_equal(order, again, sizeof(order));
	assert_int_equal(fc((struct fc_op){ .kind = FC_UNLISTEN,
					    .lsn = lsn.lsn }), 0);
	assert_int_equal(fake_sctp_quiet(), 0);
	uiw_sctp_stack_put(fc_st);
	fc_st = NULL;
}

/* ====================================================================== */
/* The layer, through the CM and the engine                               */
/* ====================================================================== */

#define ACC_ALL (UIW_ACCESS_LOCAL_WRITE | UIW_ACCESS_REMOTE_WRITE | \
		 UIW_ACCESS_REMOTE_READ)

/* One end of a connection: its QP, a CQ for both queues, a registered
 * buffer, the CM id. */
struct side {
	struct uiw_cq *cq;
	struct uiw_qp *qp;
	struct uiw_cm_id *id;
	uint8_t *mem;
	size_t len;
	struct uiw_mr *mr;
	/* what the connection's messages on the tap name */
	unsigned assoc;
	uint16_t sid;
};

#define MAX_SIDES 16

struct env {
	struct uiw_device *dev;
	struct uiw_pd *prot;
	struct uiw_cm_channel *lch, *cch;
	struct uiw_cm_id *lid;
	struct sockaddr_in addr;
	struct side s[MAX_SIDES];
	int nsides;
	/* private data of the last event read */
	uint8_t pd[UIW_MPA_PRIVATE_DATA_MAX];
	uint16_t pd_len;
};

static struct side *side_new(struct env *E, size_t len)
{
	struct uiw_qp_init_attr qa;
	struct side *s;

	assert_true(E->nsides < MAX_SIDES);
	s = &E->s[E->nsides++];
	memset(s, 0, sizeof(*s));
	s->cq = uiw_cq_create(E->dev, 512);
	assert_non_null(s->cq);
	memset(&qa, 0, sizeof(qa));
	qa.send_cq = qa.recv_cq = s->cq;
	qa.cap.max_send_wr = qa.cap.max_recv_wr = 64;
	qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
	qa.sq_sig_all = 1;
	s->qp = uiw_qp_create(E->prot, &qa);
	assert_non_null(s->qp);
	s->len = len ? len : 4096;
	s->mem = aligned_alloc(4096, (s->len + 4095) & ~(size_t)4095);
	assert_non_null(s->mem);
	memset(s->mem, 0, s->len);
	s->mr = uiw_reg_mr(E->prot, s->mem, s->len, ACC_ALL);
	assert_non_null(s->mr);
	return s;
}

static void side_free(struct side *s)
{
	if (s->id)
		assert_int_equal(uiw_cm_destroy_id(s->id), 0);
	s->id = NULL;
	if (s->qp)
		assert_int_equal(uiw_qp_destroy(s->qp), 0);
	s->qp = NULL;
	if (s->mr)
		assert_int_equal(uiw_dereg_mr(s->mr), 0);
	s->mr = NULL;
	free(s->mem);
	s->mem = NULL;
	if (s->cq)
		assert_int_equal(uiw_cq_destroy(s->cq), 0);
	s->cq = NULL;
}

static void env_listen(struct env *E)
{
	struct uiw_listen_param lp = { .llp = UIW_LLP_SCTP_UDP };
	struct sockaddr_storage ss;

	memset(&E->addr, 0, sizeof(E->addr));
	E->addr.sin_family = AF_INET;
	E->addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(uiw_cm_listen_ex(E->lch, (struct sockaddr *)&E->addr,
					  sizeof(E->addr), &lp, &E->lid), 0);
	assert_int_equal(uiw_cm_local_addr(E->lid, &ss), 0);
	assert_int_equal(ss.ss_family, AF_INET);
	memcpy(&E->addr, &ss, sizeof(E->addr));
	assert_int_not_equal(E->addr.sin_port, 0);
}

static int env_setup(void **state)
{
	struct fake_sctp_cfg c = { .seed = 1 };
	struct env *E = calloc(1, sizeof(*E));

	assert_non_null(E);
	fake_sctp_configure(&c);
	fake_sctp_tap_clear();
	uiw_ddps_set_gap_ms(10000);
	E->dev = uiw_device_open(NULL);
	assert_non_null(E->dev);
	E->prot = uiw_pd_alloc(E->dev);
	assert_non_null(E->prot);
	E->lch = uiw_cm_channel_create(E->dev);
	E->cch = uiw_cm_channel_create(E->dev);
	assert_non_null(E->lch);
	assert_non_null(E->cch);
	env_listen(E);
	*state = E;
	return 0;
}

static int env_teardown(void **state)
{
	struct env *E = *state;
	int i;

	for (i = 0; i < E->nsides; i++)
		side_free(&E->s[i]);
	if (E->lid)
		assert_int_equal(uiw_cm_destroy_id(E->lid), 0);
	/* Nothing of the carrier runs after the layer lets the stack go
	 * (fake_sctp.h). */
	assert_int_equal(fake_sctp_quiet(), 0);
	assert_int_equal(uiw_cm_channel_destroy(E->lch), 0);
	assert_int_equal(uiw_cm_channel_destroy(E->cch), 0);
	/* the last reference went with the channels: the stack is gone */
	assert_int_equal(fake_sctp_streams(), -ENODEV);
	assert_int_equal(uiw_pd_free(E->prot), 0);
	assert_int_equal(uiw_device_close(E->dev), 0);
	fake_sctp_tap_clear();
	free(E);
	return 0;
}

/* The next event on ch, of type; its private data copied into E. */
static void expect_ev(struct env *E, struct uiw_cm_channel *ch,
		      enum uiw_cm_event_type type, struct uiw_cm_event *ev)
{
	struct uiw_cm_event tmp;
	int rc;

	if (!ev)
		ev = &tmp;
	memset(ev, 0, sizeof(*ev));
	rc = uiw_cm_get_event(ch, ev, WAIT_MS);
	if (rc < 0)
		fail_msg("waiting for %s: %s (%s)", uiw_cm_event_str(type),
			 strerror(-rc), uiw_last_error());
	if (ev->type != type)
		fail_msg("expected %s, got %s (status %d)",
			 uiw_cm_event_str(type), uiw_cm_event_str(ev->type),
			 ev->status);
	E->pd_len = ev->private_data_len;
	if (ev->private_data_len)
		memcpy(E->pd, ev->private_data, ev->private_data_len);
	ev->private_data = E->pd;
}

static void expect_no_ev(struct uiw_cm_channel *ch)
{
	struct uiw_cm_event ev;
	int rc = uiw_cm_get_event(ch, &ev, 0);

	if (rc == 0)
		fail_msg("unexpected %s (status %d)",
			 uiw_cm_event_str(ev.type), ev.status);
	assert_int_equal(rc, -EAGAIN);
}

static const struct uiw_conn_param sctp_param = {
	.llp = UIW_LLP_SCTP_UDP,
};

/* ---- The tap ------------------------------------------------------------ */

static int rec_fc(const struct fake_sctp_rec *r)
{
	if (r->ppid != UIW_SCTP_PPID_CTL || r->len < 4)
		return -1;
	return r->data[2] << 8 | r->data[3];
}

static uint16_t rec_ssn(const struct fake_sctp_rec *r)
{
	assert_true(r->len >= 2);
	return uiw_ddps_ssn(r->data);
}

/* What a test expects of one message: -1 fields match anything. */
struct want {
	int from_active;
	int sid;
	int ppid;
	int fc;                     /* control messages */
	int ssn;
};

static bool rec_is(const struct fake_sctp_rec *r, unsigned assoc,
		   const struct want *w)
{
	return (!assoc || r->assoc == assoc) &&
	       (w->from_active < 0 || (w->from_active != 0) ==
		r->from_active) &&
	       (w->sid < 0 || r->sid == w->sid) &&
	       (w->ppid < 0 || r->ppid == (uint32_t)w->ppid) &&
	       (w->fc < 0 || rec_fc(r) == w->fc) &&
	       (w->ssn < 0 || (r->len >= 2 && rec_ssn(r) == w->ssn));
}

static const char *rec_str(const struct fake_sctp_rec *r, char *b, size_t n)
{
	snprintf(b, n, "assoc %u %s sid %u ppid %u %s ssn %d len %zu",
		 r->assoc, r->from_active ? "active->" : "passive->", r->sid,
		 r->ppid, rec_fc(r) >= 0 ? uiw_ddps_fc_name(
			 (uint16_t)rec_fc(r)) : "-",
		 r->len >= 2 ? rec_ssn(r) : -1, r->len);
	return b;
}

/* The first record at or after *from that w matches, waiting for it;
 * *from is moved past it. */
static void tap_expect(size_t *from, unsigned assoc, const struct want *w,
		       struct fake_sctp_rec *out)
{
	struct fake_sctp_rec r;
	size_t i = *from;

	for (;;) {
		while (fake_sctp_tap_get(i, &r)) {
			if (rec_is(&r, assoc, w)) {
				if (out)
					*out = r;
				*from = i + 1;
				return;
			}
			i++;
		}
		if (fake_sctp_tap_wait(i, WAIT_MS) < 0 &&
		    !fake_sctp_tap_get(i, &r))
			fail_msg("no message from=%d sid=%d ppid=%d fc=%d "
				 "ssn=%d on the tap after record %zu",
				 w->from_active, w->sid, w->ppid, w->fc,
				 w->ssn, *from);
	}
}

/* The records from index from on are exactly ws[0..n) (after the
 * carrier has settled). */
static void tap_exact(size_t from, unsigned assoc, const struct want *ws,
		      size_t n)
{
	struct fake_sctp_rec r;
	char b[160];
	size_t i;

	/* all of them, then whatever would follow at once */
	if (n && fake_sctp_tap_wait(from + n - 1, WAIT_MS) < 0)
		fail_msg("tap: %zu records after %zu expected, %zu there",
			 n, from, fake_sctp_tap_count() - from);
	assert_int_equal(fake_sctp_settle(WAIT_MS), 0);
	for (i = 0; i < n; i++) {
		if (!fake_sctp_tap_get(from + i, &r))
			fail_msg("tap: record %zu missing (%zu expected)",
				 from + i, n);
		if (!rec_is(&r, assoc, &ws[i]))
			fail_msg("tap: record %zu is %s, not message %zu "
				 "expected", from + i, rec_str(&r, b,
							      sizeof(b)), i);
	}
	if (fake_sctp_tap_get(from + n, &r))
		fail_msg("tap: an extra record %zu: %s", from + n,
			 rec_str(&r, b, sizeof(b)));
}

#define W(fa, sd, pp, f, sn) ((struct want){ (fa), (sd), (pp), (f), (sn) })
#define CTL(fa, sd, f, sn) W(fa, sd, UIW_SCTP_PPID_CTL, f, sn)

/* ---- Connections ------------------------------------------------------- */

/* Starts c's connection to the listener. */
static void cm_connect(struct env *E, struct side *c,
		       const struct uiw_conn_param *cp)
{
	assert_int_equal(uiw_cm_connect(E->cch, c->qp,
					(struct sockaddr *)&E->addr,
					sizeof(E->addr), cp, &c->id), 0);
}

/* Connects c to the listener and accepts on s: CONNECT_REQUEST (into
 * req), ESTABLISHED on both (into cev, sev); c and s learn the session's
 * association and stream from the Accept on the tap. */
static void cm_pair(struct env *E, struct side *c, struct side *s,
		    const struct uiw_conn_param *cp,
		    const struct uiw_conn_param *ap, struct uiw_cm_event *req,
		    struct uiw_cm_event *cev, struct uiw_cm_event *sev)
{
	struct uiw_cm_event r, ce, se;
	struct fake_sctp_rec rec;
	size_t mark = fake_sctp_tap_count();

	cm_connect(E, c, cp ? cp : &sctp_param);
	expect_ev(E, E->lch, UIW_CM_EVENT_CONNECT_REQUEST, req ? req : &r);
	s->id = (req ? req : &r)->id;
	assert_int_equal((req ? req : &r)->llp, UIW_LLP_SCTP_UDP);
	assert_int_equal(uiw_cm_accept(s->id, s->qp, ap ? ap : &sctp_param),
			 0);
	expect_ev(E, E->lch, UIW_CM_EVENT_ESTABLISHED, sev ? sev : &se);
	expect_ev(E, E->cch, UIW_CM_EVENT_ESTABLISHED, cev ? cev : &ce);
	do
		tap_expect(&mark, 0, &W(0, -1, UIW_SCTP_PPID_CTL, -1, 0),
			   &rec);
	while (rec_fc(&rec) != UIW_DDPS_ACCEPT &&
	       rec_fc(&rec) != UIW_DDPS_E_ACCEPT);
	c->assoc = s->assoc = rec.assoc;
	c->sid = s->sid = rec.sid;
}

static void post_recv(struct side *s, uint64_t id, size_t off, size_t len)
{
	struct uiw_sge sge = { (uintptr_t)(s->mem + off), (uint32_t)len,
			       s->mr->lkey };
	struct uiw_recv_wr wr = { .wr_id = id, .sg_list = &sge,
				  .num_sge = len ? 1 : 0 };

	assert_int_equal(uiw_post_recv(s->qp, &wr, NULL), 0);
}

static void post_send(struct side *s, uint64_t id, enum uiw_wr_opcode op,
		      size_t off, size_t len, uint64_t raddr, uint32_t rkey)
{
	struct uiw_sge sge = { (uintptr_t)(s->mem + off), (uint32_t)len,
			       s->mr->lkey };
	struct uiw_send_wr wr = { .wr_id = id, .sg_list = &sge,
				  .num_sge = len ? 1 : 0, .opcode = op };

	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	assert_int_equal(uiw_post_send(s->qp, &wr, NULL), 0);
}

static uint64_t to_of(const struct side *s, size_t off)
{
	return (uint64_t)(uintptr_t)(s->mem + off);
}

/* One completion within WAIT_MS, sleeping on the CQ's notification. */
static void wait_wc(struct uiw_cq *cq, struct uiw_wc *wc)
{
	int n, i;

	for (i = 0; i < 100000; i++) {
		n = uiw_cq_poll(cq, 1, wc);
		assert_true(n >= 0);
		if (n == 1)
			return;
		assert_int_equal(uiw_cq_req_notify(cq, 0), 0);
		n = uiw_cq_poll(cq, 1, wc);
		assert_true(n >= 0);
		if (n == 1)
			return;
		if (uiw_cq_wait(cq, WAIT_MS) <= 0)
			fail_msg("no completion within %d ms", WAIT_MS);
		uiw_cq_ack_events(cq);
	}
	fail_msg("no completion");
}

static void expect_wc(struct side *s, uint64_t id, enum uiw_wc_status st,
		      uint32_t byte_len)
{
	struct uiw_wc wc;

	wait_wc(s->cq, &wc);
	if (wc.wr_id != id || wc.status != st)
		fail_msg("completion %llu status %s (%u octets), expected "
			 "%llu %s", (unsigned long long)wc.wr_id,
			 uiw_wc_status_str(wc.status), wc.byte_len,
			 (unsigned long long)id, uiw_wc_status_str(st));
	if (st == UIW_WC_SUCCESS)
		assert_int_equal(wc.byte_len, byte_len);
}

static void cq_empty(struct side *s)
{
	struct uiw_wc wc;

	assert_int_equal(uiw_cq_poll(s->cq, 1, &wc), 0);
}

static void pattern(uint8_t *p, size_t n, uint32_t seed)
{
	uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
	size_t i;

	for (i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		p[i] = (uint8_t)x;
	}
}

/* ---- Connection setup ---------------------------------------------------- */

/* Private data both ways: the Initiate's in CONNECT_REQUEST, the
 * Accept's in the initiator's ESTABLISHED (RFC 5043 §6.2), on the wire
 * after the word of the enhanced codes (RFC 6581 §7). */
static void test_connect_private_data(void **state)
{
	static const char ipd[] = "from the initiator";
	static const char apd[] = "and back from the responder";
	struct env *E = *state;
	struct side *c = side_new(E, 0), *s = side_new(E, 0);
	struct uiw_conn_param cp = sctp_param, ap = sctp_param;
	struct uiw_cm_event req, cev, sev;
	struct fake_sctp_rec r;
	size_t mark = fake_sctp_tap_count();

	cp.private_data = ipd;
	cp.private_data_len = sizeof(ipd);
	ap.private_data = apd;
	ap.private_data_len = sizeof(apd);
	cm_connect(E, c, &cp);
	expect_ev(E, E->lch, UIW_CM_EVENT_CONNECT_REQUEST, &req);
	s->id = req.id;
	assert_int_equal(req.private_data_len, sizeof(ipd));
	assert_memory_equal(req.private_data, ipd, sizeof(ipd));
	assert_int_equal(req.llp, UIW_LLP_SCTP_UDP);
	assert_ptr_equal(req.listen_id, E->lid);
	assert_int_equal(uiw_cm_accept(s->id, s->qp, &ap), 0);
	expect_ev(E, E->lch, UIW_CM_EVENT_ESTABLISHED, &sev);
	expect_ev(E, E->cch, UIW_CM_EVENT_ESTABLISHED, &cev);
	assert_int_equal(cev.private_data_len, sizeof(apd));
	assert_memory_equal(cev.private_data, apd, sizeof(apd));
	assert_int_equal(cev.llp, UIW_LLP_SCTP_UDP);
	assert_int_equal(cev.status, 0);

	/* the wire: Enhanced Initiate, Enhanced Accept, both DDP-SSN 0,
	 * on one stream */
	tap_expect(&mark, 0, &CTL(1, -1, UIW_DDPS_E_INITIATE, 0), &r);
	assert_int_equal(r.len, 4 + 4 + sizeof(ipd));
	assert_memory_equal(r.data + 8, ipd, sizeof(ipd));
	c->assoc = r.assoc;
	c->sid = r.sid;
	tap_expect(&mark, c->assoc, &CTL(0, c->sid, UIW_DDPS_E_ACCEPT, 0),
		   &r);
	assert_int_equal(r.len, 4 + 4 + sizeof(apd));
	assert_memory_equal(r.data + 8, apd, sizeof(apd));
}

static void query(struct side *s, struct uiw_qp_attr *a)
{
	assert_int_equal(uiw_qp_query(s->qp, a), 0);
}

/* RFC 6581 §9.1 over SCTP (§7): the responder lowers its ORD to the
 * initiator's IRD and raises its IRD to the initiator's ORD; the
 * initiator lowers its ORD to the responder's IRD and raises its IRD to
 * the responder's ORD.  Each side's event names the peer's word, and
 * the QPs run with the outcome over UIW_LLP_SCTP_UDP. */
static void test_enhanced_ird_ord(void **state)
{
	struct env *E = *state;
	struct side *c = side_new(E, 0), *s = side_new(E, 0);
	struct uiw_conn_param cp = sctp_param, ap = sctp_param;
	struct uiw_cm_event req, cev, sev;
	struct uiw_qp_attr a;
	struct fake_sctp_rec r;
	size_t mark = fake_sctp_tap_count();

	cp.ird = 3;
	cp.ord = 2;
	ap.ird = 6;
	ap.ord = 5;
	cm_pair(E, c, s, &cp, &ap, &req, &cev, &sev);
	assert_int_equal(req.peer_ird, 3);
	assert_int_equal(req.peer_ord, 2);
	assert_int_equal(sev.ird, 6);      /* max(6, 2) */
	assert_int_equal(sev.ord, 3);      /* min(5, 3) */
	assert_int_equal(cev.peer_ird, 6);
	assert_int_equal(cev.peer_ord, 3);
	assert_int_equal(cev.ird, 3);      /* max(3, 3) */
	assert_int_equal(cev.ord, 2);      /* min(2, 6) */
	assert_int_equal(cev.p2p, 0);
	query(c, &a);
	assert_int_equal(a.state, UIW_QPS_RTS);
	assert_int_equal(a.llp, UIW_LLP_SCTP_UDP);
	assert_int_equal(a.ird, 3);
	assert_int_equal(a.ord, 2);
	assert_false(a.crc || a.markers_tx || a.markers_rx);
	/* RFC 5043 §9: MULPDU is what one DATA chunk carries, less the
	 * DDP-SSN */
	assert_int_equal(a.mulpdu, FAKE_SCTP_MAXSEG_DEF - 2);
	query(s, &a);
	assert_int_equal(a.llp, UIW_LLP_SCTP_UDP);
	assert_int_equal(a.ird, 6);
	assert_int_equal(a.ord, 3);
	/* and the words on the wire */
	tap_expect(&mark, c->assoc, &CTL(1, c->sid, UIW_DDPS_E_INITIATE, 0),
		   &r);
	assert_int_equal(r.len, 8);
	assert_int_equal(ntohs(*(const uint16_t *)(r.data + 4)), 3);
	assert_int_equal(ntohs(*(const uint16_t *)(r.data + 6)), 2);
	tap_expect(&mark, c->assoc, &CTL(0, c->sid, UIW_DDPS_E_ACCEPT, 0),
		   &r);
	assert_int_equal(r.len, 8);
	assert_int_equal(ntohs(*(const uint16_t *)(r.data + 4)), 6);
	assert_int_equal(ntohs(*(const uint16_t *)(r.data + 6)), 3);
}

/* mpa_rev 1: RFC 5043's own codes, no word; each side keeps its own
 * IRD and ORD. */
static void test_plain_session(void **state)
{
	static const char ipd[] = "plain";
	struct env *E = *state;
	struct side *c = side_new(E, 0), *s = side_new(E, 0);
	struct uiw_conn_param cp = sctp_param, ap = sctp_param;
	struct uiw_cm_event req, cev, sev;
	struct uiw_qp_attr a;
	size_t mark = fake_sctp_tap_count();

	cp.mpa_rev = 1;
	cp.ird = 2;
	cp.ord = 4;
	cp.private_data = ipd;
	cp.private_data_len = sizeof(ipd);
	ap.ird = 5;
	ap.ord = 1;
	cm_pair(E, c, s, &cp, &ap, &req, &cev, &sev);
	assert_int_equal(req.peer_ird, 0);
	assert_int_equal(req.peer_ord, 0);
	assert_int_equal(req.private_data_len, sizeof(ipd));
	assert_memory_equal(req.private_data, ipd, sizeof(ipd));
	assert_int_equal(cev.peer_ird, 0);
	assert_int_equal(cev.private_data_len, 0);
	query(c, &a);
	assert_int_equal(a.ird, 2);
	assert_int_equal(a.ord, 4);
	query(s, &a);
	assert_int_equal(a.ird, 5);
	assert_int_equal(a.ord, 1);
	tap_exact(mark, c->assoc, (const struct want[]){
		CTL(1, c->sid, UIW_DDPS_INITIATE, 0),
		CTL(0, c->sid, UIW_DDPS_ACCEPT, 0),
	}, 2);
}

/* RFC 5043 §6.3: a Reject with the ULP's private data; the initiator
 * hears REJECTED with it. */
static void test_reject(void **state)
{
	static const char rpd[] = "not today";
	struct env *E = *state;
	struct side *c = side_new(E, 0);
	struct uiw_cm_event req, ev;
	struct fake_sctp_rec r;
	size_t mark = fake_sctp_tap_count();

	cm_connect(E, c, &sctp_param);
	expect_ev(E, E->lch, UIW_CM_EVENT_CONNECT_REQUEST, &req);
	assert_int_equal(uiw_cm_reject(req.id, rpd, sizeof(rpd)), 0);
	expect_ev(E, E->cch, UIW_CM_EVENT_REJECTED, &ev);
	assert_int_equal(ev.status, -ECONNREFUSED);
	assert_int_equal(ev.private_data_len, sizeof(rpd));
	assert_memory_equal(ev.private_data, rpd, sizeof(rpd));
	assert_int_equal(uiw_cm_destroy_id(req.id), 0);
	tap_expect(&mark, 0, &CTL(1, -1, UIW_DDPS_E_INITIATE, 0), &r);
	c->assoc = r.assoc;
	c->sid = r.sid;
	tap_expect(&mark, c->assoc, &CTL(0, c->sid, UIW_DDPS_REJECT, 0), &r);
	assert_int_equal(r.len, 4 + sizeof(rpd));
	assert_memory_equal(r.data + 4, rpd, sizeof(rpd));
	expect_no_ev(E->lch);
	expect_no_ev(E->cch);
}

/* A listener held to revision 1 knows only RFC 5043's codes: it ends
 * the enhanced session with a Session Terminate (§6.1), and the
 * initiator sends a plain Initiate on another stream (RFC 6581 §7). */
static void test_rev1_listener_fallback(void **state)
{
	struct env *E = *state;
	struct side *c = side_new(E, 0), *s = side_new(E, 0);
	struct uiw_cm_event req;
	struct fake_sctp_rec r;
	size_t mark = fake_sctp_tap_count();
	uint16_t first;

	assert_int_equal(uiw_cm_set_max_mpa_rev(E->lid, 1), 0);
	cm_pair(E, c, s, NULL, NULL, &req, NULL, NULL);
	assert_int_equal(req.peer_ird, 0);    /* plain: no word */
	tap_expect(&mark, 0, &CTL(1, -1, UIW_DDPS_E_INITIATE, 0), &r);
	first = r.sid;
	assert_int_not_equal(first, c->sid);
	tap_exact(mark - 1, c->assoc, (const struct want[]){
		CTL(1, first, UIW_DDPS_E_INITIATE, 0),
		CTL(0, first, UIW_DDPS_TERMINATE, 0),
		CTL(1, c->sid, UIW_DDPS_INITIATE, 0),
		CTL(0, c->sid, UIW_DDPS_ACCEPT, 0),
	}, 4);
}

/* ---- Data ---------------------------------------------------------------- */

/* Write, Send and Read of sizes up to 1 MiB, each verified octet by
 * octet, while the carrier shuffles every 64 messages: DDP-SSN puts
 * them back (RFC 5043 §10). */
static void run_data(struct env *E, size_t big)
{
	static const size_t sizes[] = { 1, 1379, 1380, 1381, 4096, 65543 };
	/* Write and Read at 0, Send at so: a guard octet after each */
	size_t so = big + 64, i, n;
	struct side *c = side_new(E, so + big + 64);
	struct side *s = side_new(E, so + big + 64);
	uint64_t id = 1;

	cm_pair(E, c, s, NULL, NULL, NULL, NULL, NULL);
	for (i = 0; i <= sizeof(sizes) / sizeof(sizes[0]); i++) {
		n = i < sizeof(sizes) / sizeof(sizes[0]) ? sizes[i] : big;
		/* RDMA Write c -> s, then a Send: the Write is placed
		 * before the Send is delivered (RFC 5040 §5.5) */
		pattern(c->mem, n, (uint32_t)(3 * i + 1));
		pattern(c->mem + so, n, (uint32_t)(3 * i + 2));
		memset(s->mem, 0, so + n + 1);
		post_send(c, id, UIW_WR_RDMA_WRITE, 0, n, to_of(s, 0),
			  s->mr->rkey);
		post_recv(s, id + 1, so, n);
		post_send(c, id + 2, UIW_WR_SEND, so, n, 0, 0);
		expect_wc(s, id + 1, UIW_WC_SUCCESS, (uint32_t)n);
		assert_memory_equal(s->mem, c->mem, n);
		assert_int_equal(s->mem[n], 0);
		assert_memory_equal(s->mem + so, c->mem + so, n);
		assert_int_equal(s->mem[so + n], 0);
		expect_wc(c, id, UIW_WC_SUCCESS, (uint32_t)n);
		expect_wc(c, id + 2, UIW_WC_SUCCESS, (uint32_t)n);
		id += 3;
		/* RDMA Read s <- c */
		pattern(c->mem, n, (uint32_t)(3 * i + 3));
		memset(s->mem, 0, n + 1);
		post_send(s, id, UIW_WR_RDMA_READ, 0, n, to_of(c, 0),
			  c->mr->rkey);
		expect_wc(s, id++, UIW_WC_SUCCESS, (uint32_t)n);
		assert_memory_equal(s->mem, c->mem, n);
		assert_int_equal(s->mem[n], 0);
	}
	cq_empty(c);
	cq_empty(s);
}

static void test_data_reordered(void **state)
{
	struct fake_sctp_cfg cfg = { .seed = 0x5eed, .window = 64 };
	struct env *E = *state;
	struct fake_sctp_stats st;

	fake_sctp_configure(&cfg);
	run_data(E, MIB);
	/* the windows did reorder */
	assert_int_equal(fake_sctp_stats(&st), 0);
	assert_true(st.reordered > 1000);
}

/* The peer's queue full: the carrier says -EAGAIN, the layer waits for
 * writable, nothing is lost or reordered beyond what DDP-SSN mends. */
static void test_data_flow_control(void **state)
{
	struct fake_sctp_cfg cfg = { .seed = 77, .window = 16,
				     .queue_max = 8192 };
	struct env *E = *state;

	struct fake_sctp_stats st;

	fake_sctp_configure(&cfg);
	run_data(E, 256 * 1024);
	assert_int_equal(fake_sctp_stats(&st), 0);
	assert_true(st.eagain > 0 && st.writable > 0);
}

/* RFC 5043 §10: fewer than 32768 chunks of a stream unacknowledged.
 * With the association reporting 30000 outstanding, the layer stops
 * every 4096 chunks until the carrier says dry, and goes on. */
static void test_data_inflight_bound(void **state)
{
	struct fake_sctp_cfg cfg = { .seed = 8, .window = 32, .maxseg = 518,
				     .unacked = 30000 };
	struct env *E = *state;
	size_t n = 5000 * 502;             /* > 4096 chunks of 516 */
	struct side *c = side_new(E, n), *s = side_new(E, n);
	struct fake_sctp_stats st;
	struct uiw_qp_attr a;

	fake_sctp_configure(&cfg);
	cm_pair(E, c, s, NULL, NULL, NULL, NULL, NULL);
	query(c, &a);
	assert_int_equal(a.mulpdu, 516);   /* RFC 5043 §9's least */
	pattern(c->mem, n, 99);
	post_send(c, 1, UIW_WR_RDMA_WRITE, 0, n, to_of(s, 0), s->mr->rkey);
	post_recv(s, 2, 0, 0);
	post_send(c, 3, UIW_WR_SEND, 0, 0, 0, 0);
	expect_wc(s, 2, UIW_WC_SUCCESS, 0);
	assert_memory_equal(s->mem, c->mem, n);
	assert_int_equal(fake_sctp_stats(&st), 0);
	assert_true(st.dry >= 1);
}

/* ---- Streams and associations ------------------------------------------ */

/* RFC 5043 §4, §8: connections to one peer share one association, each
 * on a stream of its own; a Send on each arrives on its own QP. */
static void test_many_qps_one_assoc(void **state)
{
	enum { N = 6 };
	struct env *E = *state;
	struct side *c[N], *s[N];
	int i, j;

	for (i = 0; i < N; i++) {
		c[i] = side_new(E, 0);
		s[i] = side_new(E, 0);
		cm_pair(E, c[i], s[i], NULL, NULL, NULL, NULL, NULL);
		assert_int_equal(c[i]->assoc, c[0]->assoc);
		for (j = 0; j < i; j++)
			assert_int_not_equal(c[i]->sid, c[j]->sid);
	}
	assert_int_equal(fake_sctp_assocs(), 1);
	assert_int_equal(fake_sctp_last_assoc(), c[0]->assoc);
	for (i = 0; i < N; i++) {
		pattern(c[i]->mem, 100, (uint32_t)i);
		post_recv(s[i], 10 + i, 0, 200);
	}
	for (i = N - 1; i >= 0; i--)
		post_send(c[i], 20 + i, UIW_WR_SEND, 0, 100, 0, 0);
	for (i = 0; i < N; i++) {
		expect_wc(s[i], 10 + i, UIW_WC_SUCCESS, 100);
		expect_wc(c[i], 20 + i, UIW_WC_SUCCESS, 100);
		assert_memory_equal(s[i]->mem, c[i]->mem, 100);
	}
}

/* Fewer inbound than outbound streams (§8: the usable count is the
 * smaller): sessions use only those, and a connection that finds none
 * free gets an association of its own. */
static void test_unequal_streams(void **state)
{
	struct fake_sctp_cfg cfg = { .seed = 5, .in_streams = 3,
				     .out_streams = 9 };
	struct env *E = *state;
	struct side *c[4], *s[4];
	int i;

	fake_sctp_configure(&cfg);
	for (i = 0; i < 4; i++) {
		c[i] = side_new(E, 0);
		s[i] = side_new(E, 0);
		cm_pair(E, c[i], s[i], NULL, NULL, NULL, NULL, NULL);
		assert_true(c[i]->sid < 3);
	}
	assert_int_equal(c[1]->assoc, c[0]->assoc);
	assert_int_equal(c[2]->assoc, c[0]->assoc);
	assert_int_not_equal(c[3]->assoc, c[0]->assoc);
	assert_int_equal(fake_sctp_assocs(), 2);
	post_recv(s[3], 1, 0, 64);
	post_send(c[3], 2, UIW_WR_SEND, 0, 64, 0, 0);
	expect_wc(s[3], 1, UIW_WC_SUCCESS, 64);
	expect_wc(c[3], 2, UIW_WC_SUCCESS, 64);
}

/* ---- Ending ---------------------------------------------------------------- */

/* RFC 5043 §6.2: an orderly end is both Session Terminates; each side
 * hears DISCONNECTED; receives still posted are flushed. */
static void test_disconnect(void **state)
{
	struct env *E = *state;
	struct side *c = side_new(E, 0), *s = side_new(E, 0);
	struct uiw_qp_attr a;
	size_t mark;

	cm_pair(E, c, s, NULL, NULL, NULL, NULL, NULL);
	post_recv(c, 1, 0, 100);
	post_recv(s, 2, 0, 100);
	mark = fake_sctp_tap_count();
	assert_int_equal(uiw_cm_disconnect(c->id), 0);
	expect_ev(E, E->cch, UIW_CM_EVENT_DISCONNECTED, NULL);
	expect_ev(E, E->lch, UIW_CM_EVENT_DISCONNECTED, NULL);
	expect_wc(c, 1, UIW_WC_WR_FLUSH_ERR, 0);
	expect_wc(s, 2, UIW_WC_WR_FLUSH_ERR, 0);
	tap_exact(mark, c->assoc, (const struct want[]){
		CTL(1, c->sid, UIW_DDPS_TERMINATE, 0 + 1),
		CTL(0, c->sid, UIW_DDPS_TERMINATE, 0 + 1),
	}, 2);
	/* orderly both ways: back to Idle (RFC 5040 §6) */
	query(c, &a);
	assert_int_equal(a.state, UIW_QPS_IDLE);
	query(s, &a);
	assert_int_equal(a.state, UIW_QPS_IDLE);
	expect_no_ev(E->cch);
	expect_no_ev(E->lch);
}

/* An orderly end while the carrier has no room (-EAGAIN): the Session
 * Terminate waits for writable like any chunk (RFC 5043 §6.2: at least
 * one side sends one); it is not dropped, nor the end made abortive. */
static void test_disconnect_no_room(void **state)
{
	struct env *E = *state;
	struct side *c = side_new(E, 0), *s = side_new(E, 0);
	struct uiw_cm_event ev;
	size_t mark;

	cm_pair(E, c, s, NULL, NULL, NULL, NULL, NULL);
	post_recv(s, 2, 0, 100);
	assert_int_equal(fake_sctp_block(c->assoc, true, true), 0);
	mark = fake_sctp_tap_count();
	assert_int_equal(uiw_cm_disconnect(c->id), 0);
	assert_int_equal(fake_sctp_settle(WAIT_MS), 0);
	/* nothing could go; the responder has heard nothing */
	tap_exact(mark, 0, NULL, 0);
	expect_no_ev(E->lch);
	expect_no_ev(E->cch);
	assert_int_equal(fake_sctp_block(c->assoc, true, false), 0);
	expect_ev(E, E->cch, UIW_CM_EVENT_DISCONNECTED, &ev);
	expect_ev(E, E->lch, UIW_CM_EVENT_DISCONNECTED, NULL);
	expect_wc(s, 2, UIW_WC_WR_FLUSH_ERR, 0);
	tap_exact(mark, c->assoc, (const struct want[]){
		CTL(1, c->sid, UIW_DDPS_TERMINATE, 1),
		CTL(0, c->sid, UIW_DDPS_TERMINATE, 1),
	}, 2);
}

/* The association fails: no stream is left for a Terminate, so every
 * session ends at once: established ones DISCONNECTED with their work
 * requests flushed, one still being set up CONNECT_ERROR (both sides of
 * it). */
static void test_assoc_abort(void **state)
{
	struct env *E = *state;
	struct side *c1 = side_new(E, 0), *s1 = side_new(E, 0);
	struct side *c2 = side_new(E, 0), *s2 = side_new(E, 0);
	struct side *c3 = side_new(E, 0);
	struct uiw_cm_event req, ev;
	size_t mark;

	cm_pair(E, c1, s1, NULL, NULL, NULL, NULL, NULL);
	cm_pair(E, c2, s2, NULL, NULL, NULL, NULL, NULL);
	assert_int_equal(c1->assoc, c2->assoc);
	post_recv(c1, 11, 0, 100);
	post_recv(s1, 12, 0, 100);
	post_recv(c2, 21, 0, 100);
	post_recv(s2, 22, 0, 100);
	post_recv(s2, 23, 100, 100);
	/* a third connection, requested and not yet answered */
	cm_connect(E, c3, &sctp_param);
	expect_ev(E, E->lch, UIW_CM_EVENT_CONNECT_REQUEST, &req);
	mark = fake_sctp_tap_count();
	assert_int_equal(fake_sctp_abort(c1->assoc, true), 0);
	/* the initiator's side: we aborted (-ECONNABORTED) */
	expect_ev(E, E->cch, UIW_CM_EVENT_DISCONNECTED, &ev);
	expect_ev(E, E->cch, UIW_CM_EVENT_DISCONNECTED, &ev);
	expect_ev(E, E->cch, UIW_CM_EVENT_CONNECT_ERROR, &ev);
	assert_ptr_equal(ev.id, c3->id);
	assert_int_equal(ev.status, -ECONNABORTED);
	/* the responder's: the peer aborted */
	expect_ev(E, E->lch, UIW_CM_EVENT_DISCONNECTED, NULL);
	expect_ev(E, E->lch, UIW_CM_EVENT_DISCONNECTED, NULL);
	expect_ev(E, E->lch, UIW_CM_EVENT_CONNECT_ERROR, &ev);
	assert_ptr_equal(ev.id, req.id);
	assert_int_equal(ev.status, -ECONNRESET);
	assert_int_not_equal(uiw_cm_accept(req.id, side_new(E, 0)->qp,
					   &sctp_param), 0);
	assert_int_equal(uiw_cm_destroy_id(req.id), 0);
	expect_wc(c1, 11, UIW_WC_WR_FLUSH_ERR, 0);
	expect_wc(s1, 12, UIW_WC_WR_FLUSH_ERR, 0);
	expect_wc(c2, 21, UIW_WC_WR_FLUSH_ERR, 0);
	expect_wc(s2, 22, UIW_WC_WR_FLUSH_ERR, 0);
	expect_wc(s2, 23, UIW_WC_WR_FLUSH_ERR, 0);
	/* nothing could be sent: the association was gone */
	tap_exact(mark, 0, NULL, 0);
	assert_int_equal(fake_sctp_wait_assocs(0, WAIT_MS), 0);
}

/* RFC 5043 §5.1, §7.1: an association whose peer gave no DDP
 * Adaptation Layer Indication (or another one) carries no DDP: it is
 * aborted and the connection fails with -EPROTO. */
static void run_no_adapt(struct env *E, enum fake_sctp_adapt how)
{
	struct fake_sctp_cfg cfg = { .seed = 3, .active_sees = how,
				     .adapt_other = 0x12345678 };
	struct side *c = side_new(E, 0);
	struct uiw_cm_event ev;
	size_t mark = fake_sctp_tap_count();

	fake_sctp_configure(&cfg);
	cm_connect(E, c, &sctp_param);
	expect_ev(E, E->cch, UIW_CM_EVENT_CONNECT_ERROR, &ev);
	assert_int_equal(ev.status, -EPROTO);
	assert_int_equal(fake_sctp_settle(WAIT_MS), 0);
	assert_int_equal(fake_sctp_wait_assocs(0, WAIT_MS), 0);
	tap_exact(mark, 0, NULL, 0);      /* not even an Initiate */
	expect_no_ev(E->lch);
	assert_int_equal(uiw_cm_destroy_id(c->id), 0);
	c->id = NULL;
}

static void test_no_adapt_indication(void **state)
{
	run_no_adapt(*state, FAKE_ADAPT_NONE);
}

static void test_other_adapt_indication(void **state)
{
	run_no_adapt(*state, FAKE_ADAPT_OTHER);
}

/* The listener's side refuses an association without the indication
 * too: the initiator learns it as an abort. */
static void test_no_adapt_passive(void **state)
{
	struct fake_sctp_cfg cfg = { .seed = 4,
				     .passive_sees = FAKE_ADAPT_NONE };
	struct env *E = *state;
	struct side *c = side_new(E, 0);
	struct uiw_cm_event ev;

	fake_sctp_configure(&cfg);
	cm_connect(E, c, &sctp_param);
	expect_ev(E, E->cch, UIW_CM_EVENT_CONNECT_ERROR, &ev);
	assert_int_equal(ev.status, -ECONNRESET);
	assert_int_equal(fake_sctp_settle(WAIT_MS), 0);
	assert_int_equal(fake_sctp_wait_assocs(0, WAIT_MS), 0);
	expect_no_ev(E->lch);
}

/* ---- Wire reactions ------------------------------------------------------- */

/* An established pair with a receive posted on each side. */
static void open_pair(struct env *E, struct side **cp, struct side **sp)
{
	struct side *c = side_new(E, 0), *s = side_new(E, 0);

	cm_pair(E, c, s, NULL, NULL, NULL, NULL, NULL);
	post_recv(c, 101, 0, 512);
	post_recv(s, 201, 0, 512);
	*cp = c;
	*sp = s;
}

/* After the violation on the responder's session: its Session Terminate
 * (DDP-SSN 1, after its Accept) is the one message it sends; it flushes
 * and says DISCONNECTED; the initiator, told by the Terminate, ends too
 * with its own Terminate. */
static void expect_passive_violation(struct env *E, struct side *c,
				     struct side *s, size_t mark)
{
	tap_exact(mark, c->assoc, (const struct want[]){
		CTL(0, s->sid, UIW_DDPS_TERMINATE, 1),
		CTL(1, c->sid, UIW_DDPS_TERMINATE, 1),
	}, 2);
	expect_ev(E, E->lch, UIW_CM_EVENT_DISCONNECTED, NULL);
	expect_ev(E, E->cch, UIW_CM_EVENT_DISCONNECTED, NULL);
	expect_wc(s, 201, UIW_WC_WR_FLUSH_ERR, 0);
	expect_wc(c, 101, UIW_WC_WR_FLUSH_ERR, 0);
}

/* One raw chunk from the initiator's side into the responder's
 * established session, and the violation it must be. */
static void run_violation(struct env *E, uint32_t ppid, const void *m,
			  size_t n)
{
	struct side *c, *s;
	size_t mark;

	open_pair(E, &c, &s);
	mark = fake_sctp_tap_count();
	assert_int_equal(fake_sctp_inject(s->assoc, false, s->sid, ppid, m,
					  n), 0);
	expect_passive_violation(E, c, s, mark);
}

/* RFC 5043 §5.2: a DATA chunk whose PPID is neither 16 nor 17. */
static void test_inject_bad_ppid(void **state)
{
	static const uint8_t m[20] = { 0, 1, 0x41 };

	run_violation(*state, 18, m, sizeof(m));
}

/* A DDP-SSN already received (the Initiate's 0 again): a replay. */
static void test_inject_replay(void **state)
{
	/* DDP-SSN 0, then an untagged last segment header, version 1 */
	static const uint8_t m[2 + 18] = { 0, 0, 0x41 };

	run_violation(*state, UIW_SCTP_PPID_DDP, m, sizeof(m));
}

/* A Session Terminate with private data (§5.2.3) is malformed: answered
 * with our own, plain one. */
static void test_inject_terminate_with_pd(void **state)
{
	static const uint8_t m[6] = { 0, 1, 0, UIW_DDPS_TERMINATE, 'x', 'y' };

	run_violation(*state, UIW_SCTP_PPID_CTL, m, sizeof(m));
}

/* RFC 5043 §9: a DDP segment longer than any MULPDU (UIW_MULPDU_MAX).
 * Ours (the carrier's maxseg less the DDP-SSN: test_enhanced_ird_ord)
 * bounds only what we send: the peer's comes from its own path. */
static void test_inject_oversize(void **state)
{
	static const uint8_t m[2 + UIW_MULPDU_MAX + 1] = {
		0, 1,                  /* DDP-SSN 1: the next */
		0xc1,                  /* tagged, last, version 1 */
	};

	run_violation(*state, UIW_SCTP_PPID_DDP, m, sizeof(m));
}

/* The carrier delivers one DATA chunk twice: the second copy is a
 * DDP-SSN seen before, and the session ends (SCTP itself never
 * delivers a TSN twice, RFC 4960 §6.2: only a forged or broken peer
 * does). */
static void test_duplicate_chunk(void **state)
{
	struct env *E = *state;
	struct side *c, *s;
	struct fake_sctp_pick p;
	size_t mark;

	open_pair(E, &c, &s);
	p = (struct fake_sctp_pick){ c->assoc, 1, c->sid, UIW_SCTP_PPID_DDP,
				     0 };
	assert_int_equal(fake_sctp_dup(&p), 0);
	mark = fake_sctp_tap_count();
	post_send(c, 7, UIW_WR_SEND, 0, 64, 0, 0);
	/* the first copy completes the receive; the second ends it all */
	expect_wc(s, 201, UIW_WC_SUCCESS, 64);
	expect_ev(E, E->lch, UIW_CM_EVENT_DISCONNECTED, NULL);
	expect_ev(E, E->cch, UIW_CM_EVENT_DISCONNECTED, NULL);
	tap_exact(mark, c->assoc, (const struct want[]){
		W(1, c->sid, UIW_SCTP_PPID_DDP, -1, 1),
		CTL(0, s->sid, UIW_DDPS_TERMINATE, 1),
		CTL(1, c->sid, UIW_DDPS_TERMINATE, 2),
	}, 3);
}

/* The peer's Initiate on a stream of its own, as raw octets. */
static void inject_initiate(unsigned assoc, bool to_active, uint16_t sid,
			    bool enhanced)
{
	struct uiw_mpa_v2 v2 = { .ird = 1, .ord = 1 };
	uint8_t b[UIW_DDPS_CTL_MAX];
	int n = uiw_ddps_ctl_encode(b, 0, enhanced ? UIW_DDPS_E_INITIATE :
				    UIW_DDPS_INITIATE, &v2, "hi", 2);

	assert_true(n > 0);
	assert_int_equal(fake_sctp_inject(assoc, to_active, sid,
					  UIW_SCTP_PPID_CTL, b, (size_t)n), 0);
}

/* RFC 5043 §6.6: no DDP segment before the Accept.  The responder ends
 * the session with a Terminate; the request goes quietly when the
 * application had not read it yet, with CONNECT_ERROR when it had. */
static void test_inject_segment_before_accept(void **state)
{
	static const uint8_t seg[2 + 18] = { 0, 1, 0x41 };
	struct env *E = *state;
	struct side *c, *s, *x = side_new(E, 0);
	struct uiw_cm_event req, ev;
	size_t mark;
	uint16_t sid;

	open_pair(E, &c, &s);
	sid = (uint16_t)(s->sid + 100);
	/* not read: gone without a word */
	mark = fake_sctp_tap_count();
	inject_initiate(s->assoc, false, sid, true);
	assert_int_equal(fake_sctp_inject(s->assoc, false, sid,
					  UIW_SCTP_PPID_DDP, seg, sizeof(seg)),
			 0);
	tap_exact(mark, s->assoc, (const struct want[]){
		CTL(0, sid, UIW_DDPS_TERMINATE, 0),
	}, 1);
	expect_no_ev(E->lch);
	/* read first: CONNECT_ERROR, and accept has nothing to accept */
	sid++;
	mark = fake_sctp_tap_count();
	inject_initiate(s->assoc, false, sid, false);
	expect_ev(E, E->lch, UIW_CM_EVENT_CONNECT_REQUEST, &req);
	assert_int_equal(req.private_data_len, 2);
	assert_int_equal(fake_sctp_inject(s->assoc, false, sid,
					  UIW_SCTP_PPID_DDP, seg, sizeof(seg)),
			 0);
	expect_ev(E, E->lch, UIW_CM_EVENT_CONNECT_ERROR, &ev);
	assert_ptr_equal(ev.id, req.id);
	assert_int_not_equal(uiw_cm_accept(req.id, x->qp, &sctp_param), 0);
	assert_int_equal(uiw_cm_destroy_id(req.id), 0);
	tap_exact(mark, s->assoc, (const struct want[]){
		CTL(0, sid, UIW_DDPS_TERMINATE, 0),
	}, 1);
	/* the established session saw nothing of it */
	post_send(c, 5, UIW_WR_SEND, 0, 10, 0, 0);
	expect_wc(s, 201, UIW_WC_SUCCESS, 10);
	expect_wc(c, 5, UIW_WC_SUCCESS, 10);
}

/* RFC 5043 §6.4: a listener keeps a bounded number of undecided
 * Initiates; one more is answered with a Session Terminate. */
static void test_inject_too_many_initiates(void **state)
{
	struct env *E = *state;
	struct side *c, *s;
	struct uiw_cm_event r1, r2, r3;
	size_t mark;
	uint16_t base;

	open_pair(E, &c, &s);
	assert_int_equal(uiw_cm_set_max_awaiting(E->lid, 2), 0);
	base = (uint16_t)(s->sid + 10);
	mark = fake_sctp_tap_count();
	inject_initiate(s->assoc, false, base, true);
	inject_initiate(s->assoc, false, (uint16_t)(base + 1), false);
	inject_initiate(s->assoc, false, (uint16_t)(base + 2), true);
	tap_exact(mark, s->assoc, (const struct want[]){
		CTL(0, base + 2, UIW_DDPS_TERMINATE, 0),
	}, 1);
	expect_ev(E, E->lch, UIW_CM_EVENT_CONNECT_REQUEST, &r1);
	expect_ev(E, E->lch, UIW_CM_EVENT_CONNECT_REQUEST, &r2);
	expect_no_ev(E->lch);
	/* one decided: room for another */
	assert_int_equal(uiw_cm_reject(r1.id, NULL, 0), 0);
	inject_initiate(s->assoc, false, (uint16_t)(base + 3), false);
	expect_ev(E, E->lch, UIW_CM_EVENT_CONNECT_REQUEST, &r3);
	assert_int_equal(uiw_cm_destroy_id(r1.id), 0);
	/* requests the application destroys undecided leave room too */
	assert_int_equal(uiw_cm_destroy_id(r2.id), 0);
	assert_int_equal(uiw_cm_destroy_id(r3.id), 0);
	mark = fake_sctp_tap_count();
	inject_initiate(s->assoc, false, (uint16_t)(base + 4), true);
	inject_initiate(s->assoc, false, (uint16_t)(base + 5), false);
	expect_ev(E, E->lch, UIW_CM_EVENT_CONNECT_REQUEST, &r1);
	expect_ev(E, E->lch, UIW_CM_EVENT_CONNECT_REQUEST, &r2);
	tap_exact(mark, s->assoc, NULL, 0);
	assert_int_equal(uiw_cm_destroy_id(r1.id), 0);
	assert_int_equal(uiw_cm_destroy_id(r2.id), 0);
}

/* RFC 5043 §6.4: on an association we started nobody listens: an
 * Initiate from the peer there is answered with a Session Terminate. */
static void test_inject_initiate_to_initiator(void **state)
{
	struct env *E = *state;
	struct side *c, *s;
	size_t mark;
	uint16_t sid;

	open_pair(E, &c, &s);
	sid = (uint16_t)(c->sid + 20);
	mark = fake_sctp_tap_count();
	inject_initiate(c->assoc, true, sid, true);
	tap_exact(mark, c->assoc, (const struct want[]){
		CTL(1, sid, UIW_DDPS_TERMINATE, 0),
	}, 1);
	expect_no_ev(E->cch);
	expect_no_ev(E->lch);
}

/* ---- Gaps in DDP-SSN --------------------------------------------------------- */

/* A gap that never fills: the chunks after it wait, bounded in time
 * (uiw_ddps_set_gap_ms); then the session ends with a Terminate. */
static void test_gap_never_fills(void **state)
{
	struct env *E = *state;
	struct side *c, *s;
	struct fake_sctp_pick p;
	size_t mark;

	uiw_ddps_set_gap_ms(150);
	open_pair(E, &c, &s);
	p = (struct fake_sctp_pick){ c->assoc, 1, c->sid, UIW_SCTP_PPID_DDP,
				     0 };
	assert_int_equal(fake_sctp_hold(&p, 0), 0);
	mark = fake_sctp_tap_count();
	post_send(c, 9, UIW_WR_SEND, 0, 3000, 0, 0);   /* 3 segments */
	expect_ev(E, E->lch, UIW_CM_EVENT_DISCONNECTED, NULL);
	expect_ev(E, E->cch, UIW_CM_EVENT_DISCONNECTED, NULL);
	expect_wc(s, 201, UIW_WC_WR_FLUSH_ERR, 0);
	assert_int_equal(fake_sctp_held(), 1);
	tap_exact(mark, c->assoc, (const struct want[]){
		W(1, c->sid, UIW_SCTP_PPID_DDP, -1, 1),
		W(1, c->sid, UIW_SCTP_PPID_DDP, -1, 2),
		W(1, c->sid, UIW_SCTP_PPID_DDP, -1, 3),
		CTL(0, s->sid, UIW_DDPS_TERMINATE, 1),
		CTL(1, c->sid, UIW_DDPS_TERMINATE, 4),
	}, 5);
	uiw_ddps_set_gap_ms(10000);
}

/* A loss on one stream holds up no other (RFC 5043 §4, §10): a Send on
 * B completes while A's first chunk is held back; A's completes once it
 * arrives, with all its octets. */
static void test_gap_one_stream(void **state)
{
	struct env *E = *state;
	struct side *ca, *sa, *cb, *sb;
	struct fake_sctp_pick p;

	open_pair(E, &ca, &sa);
	open_pair(E, &cb, &sb);
	assert_int_equal(ca->assoc, cb->assoc);
	assert_int_not_equal(ca->sid, cb->sid);
	p = (struct fake_sctp_pick){ ca->assoc, 1, ca->sid,
				     UIW_SCTP_PPID_DDP, 0 };
	assert_int_equal(fake_sctp_hold(&p, 0), 0);
	pattern(ca->mem, 400, 41);
	pattern(cb->mem, 300, 42);
	post_send(ca, 1, UIW_WR_SEND, 0, 400, 0, 0);
	post_send(cb, 2, UIW_WR_SEND, 0, 300, 0, 0);
	expect_wc(sb, 201, UIW_WC_SUCCESS, 300);
	assert_memory_equal(sb->mem, cb->mem, 300);
	assert_int_equal(fake_sctp_held(), 1);
	assert_int_equal(fake_sctp_settle(WAIT_MS), 0);
	cq_empty(sa);
	assert_int_equal(fake_sctp_release(), 1);
	expect_wc(sa, 201, UIW_WC_SUCCESS, 400);
	assert_memory_equal(sa->mem, ca->mem, 400);
}

/* A gap that fills in time after chunks behind it waited: the message
 * completes whole (held for 50 ms, well inside the gap bound). */
static void test_gap_fills(void **state)
{
	struct fake_sctp_cfg cfg = { .seed = 9, .window = 8 };
	struct env *E = *state;
	struct side *c, *s;
	struct fake_sctp_pick p;

	fake_sctp_configure(&cfg);
	open_pair(E, &c, &s);
	p = (struct fake_sctp_pick){ c->assoc, 1, c->sid, UIW_SCTP_PPID_DDP,
				     0 };
	assert_int_equal(fake_sctp_hold(&p, 50), 0);
	pattern(c->mem, 4000, 43);
	post_recv(s, 202, 512, 3500);
	post_send(c, 1, UIW_WR_SEND, 0, 512, 0, 0);
	post_send(c, 2, UIW_WR_SEND, 512, 3400, 0, 0);
	expect_wc(s, 201, UIW_WC_SUCCESS, 512);
	expect_wc(s, 202, UIW_WC_SUCCESS, 3400);
	assert_memory_equal(s->mem, c->mem, 3912);
	assert_int_equal(fake_sctp_held(), 0);
}

/* ====================================================================== */

static int group_setup(void **state)
{
	(void)state;
	fake_sctp_install();
	return 0;
}

static int group_teardown(void **state)
{
	(void)state;
	fake_sctp_uninstall();
	return 0;
}

#define T(f) cmocka_unit_test_setup_teardown(f, env_setup, env_teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_codec_roundtrip),
		cmocka_unit_test(test_codec_pd_bounds),
		cmocka_unit_test(test_codec_terminate),
		cmocka_unit_test(test_codec_malformed),
		cmocka_unit_test(test_ssn_serial),
		cmocka_unit_test(test_fake_carrier),
		T(test_connect_private_data),
		T(test_enhanced_ird_ord),
		T(test_plain_session),
		T(test_reject),
		T(test_rev1_listener_fallback),
		T(test_data_reordered),
		T(test_data_flow_control),
		T(test_data_inflight_bound),
		T(test_many_qps_one_assoc),
		T(test_unequal_streams),
		T(test_disconnect),
		T(test_disconnect_no_room),
		T(test_assoc_abort),
		T(test_no_adapt_indication),
		T(test_other_adapt_indication),
		T(test_no_adapt_passive),
		T(test_inject_bad_ppid),
		T(test_inject_replay),
		T(test_duplicate_chunk),
		T(test_inject_terminate_with_pd),
		T(test_inject_oversize),
		T(test_inject_segment_before_accept),
		T(test_inject_too_many_initiates),
		T(test_inject_initiate_to_initiator),
		T(test_gap_never_fills),
		T(test_gap_one_stream),
		T(test_gap_fills),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
