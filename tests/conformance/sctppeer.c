/*
 * The raw SCTP peer of the conformance tests (see sctppeer.h): the child
 * process that runs its own usrsctp, and the test process's side of the
 * command protocol that drives it.
 *
 * Protocol: one SOCK_SEQPACKET message per request (struct sp_req, then
 * its data) and one per reply (struct sp_rep, then its data), in turn;
 * each request has a sequence number that its reply repeats, so that a
 * reply that came after its caller gave up is recognised and dropped.
 * The child answers a request at once or, for one that waits (connect,
 * accept, send into a full buffer, receive, the end of an association),
 * once what it waits for happened or its time is out, running SCTP
 * meanwhile.
 *
 * Inside the child.  A "link" is an AF_CONN address: one UDP socket of
 * ours and one remote UDP endpoint; its usrsctp address is its slot
 * number plus one, so that a value usrsctp still holds after the link
 * is gone never points at freed memory (as in sctp_usr.c).  A connect
 * makes a UDP socket connected to the other end's port; a listener binds
 * one and makes a link for each new source.  UDP sockets stay open a
 * few seconds after their last user, for the SHUTDOWN or ABORT usrsctp
 * still sends.  usrsctp is called from the child's single thread only.
 */
#include "sctppeer.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <usrsctp.h>

#include "rawpeer.h"

#define SP_SLOTS        64
#define SP_LINKS        1024
#define SP_USOCKS       256
#define SP_PEERS        256      /* INIT / ABORT facts by SCTP ports */
#define SP_WIRE_MAX     65536
#define SP_WIRE_BATCH   2048
#define SP_TICK_MS      10
#define SP_LINGER_MS    5000     /* a UDP socket after its last user */
#define SP_RECV_BATCH   (96 * 1024)   /* octets per receive reply */
#define SP_REQ_MAX      (sizeof(struct sp_req) + SP_MSG_MAX)
#define SP_REP_MAX      (sizeof(struct sp_rep) + SP_RECV_BATCH + \
			 SP_MSG_MAX + 64)
#define SP_SOCKBUF      (1 << 20)
#define SP_DEF_RCVBUF   (256 * 1024)
#define SP_DEF_STREAMS  16
#define SP_FIRST_PORT   5000     /* SCTP ports: this instance's own */
#define SP_COMMON_HDR   12

enum sp_op {
	OP_CONNECT = 1, OP_LISTEN, OP_ACCEPT, OP_SEND, OP_RECV, OP_STATE,
	OP_WAIT_DOWN, OP_RCVBUF, OP_ABORT, OP_CLOSE, OP_WIRE, OP_WIRE_CLEAR,
};

struct sp_req {
	uint32_t seq;
	uint32_t op;
	int32_t id;
	int32_t timeout_ms;
	int32_t ival;
	uint16_t sctp_port, udp_port, sid, flags;
	uint32_t ppid;
	struct sp_opts o;
	uint32_t len;               /* data octets after the request */
};

struct sp_rep {
	uint32_t seq;
	int32_t rc;                 /* 0, a count, or -errno */
	int32_t id;
	uint16_t sctp_port, udp_port;
	struct sp_state st;
	uint32_t n, total;          /* WIRE: entries here, entries in all */
	uint8_t overflow;
	char msg[200];              /* why, when rc < 0 */
	uint32_t len;               /* data octets after the reply */
};

/* A received message in a RECV reply, its octets after it. */
struct sp_rec {
	uint16_t sid, flags;
	uint32_t ppid;
	uint32_t len;
};

const char *sp_chunk_name(uint8_t type)
{
	static const char *const n[] = {
		"DATA", "INIT", "INIT ACK", "SACK", "HEARTBEAT",
		"HEARTBEAT ACK", "ABORT", "SHUTDOWN", "SHUTDOWN ACK", "ERROR",
		"COOKIE ECHO", "COOKIE ACK", "ECNE", "CWR",
		"SHUTDOWN COMPLETE",
	};

	return type < sizeof(n) / sizeof(n[0]) ? n[type] : "chunk";
}

void sp_msg_free(struct sp_msg *m)
{
	if (m) {
		free(m->data);
		m->data = NULL;
	}
}

static int64_t now_ms(void)
{
	return rp_now_ms();
}

/* =================================================================== */
/* The child                                                            */
/* =================================================================== */

struct usock {
	bool used;
	int fd;
	unsigned refs;              /* slots that use it */
	int64_t free_at;            /* refs 0: closed then */
	bool listening;             /* new sources make new links */
};

struct link {
	bool used;
	int us;
	struct sockaddr_in remote;
};

struct kept {                       /* a message read, not yet handed over */
	struct kept *next;
	struct sp_rec r;
	uint8_t data[];
};

enum { K_FREE = 0, K_LSN, K_ASSOC };

struct cslot {
	int kind;
	struct socket *so;
	int us;                     /* its UDP socket */
	struct sp_state st;
	struct kept *kq, **kq_tail; /* read while waiting for the end */
	uint8_t *part;              /* a message being read */
	size_t plen;
	bool gone;                  /* usrsctp has nothing more for it */
};

struct peerinfo {                   /* by the SCTP ports of its packets */
	bool used;
	uint16_t sport, dport;
	bool init_seen, adapt_seen, abort;
	uint16_t os, mis;
	uint32_t adapt;
};

static struct {
	int ctl;
	struct usock us[SP_USOCKS];
	struct link links[SP_LINKS];
	bool registered[SP_LINKS];
	struct cslot slot[SP_SLOTS];
	struct peerinfo peers[SP_PEERS];
	unsigned peer_next;
	struct sp_wire *wire;
	size_t nwire;
	bool wire_overflow;
	uint16_t next_port;
	int64_t last_tick;
	/* the request being served */
	bool busy;
	struct sp_req req;
	uint8_t *req_data;
	int64_t deadline;
	uint8_t *rbuf;              /* requests come in here */
	uint8_t *obuf;              /* replies go out from here */
	uint8_t rx[65536 + 64];     /* a datagram */
} C;

static void c_reply(struct sp_rep *r, const void *data, size_t len)
{
	struct iovec iov[2] = {
		{ .iov_base = r, .iov_len = sizeof(*r) },
		{ .iov_base = (void *)data, .iov_len = len },
	};
	struct msghdr mh = { .msg_iov = iov, .msg_iovlen = len ? 2 : 1 };

	r->seq = C.req.seq;
	r->len = (uint32_t)len;
	if (sendmsg(C.ctl, &mh, MSG_NOSIGNAL) < 0)
		_exit(0);               /* the test process is gone */
	C.busy = false;
}

/* The failure reply (errno err); true: the request is answered. */
static bool c_fail(int err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static bool c_fail(int err, const char *fmt, ...)
{
	struct sp_rep r;
	va_list ap;

	memset(&r, 0, sizeof(r));
	r.rc = -err;
	va_start(ap, fmt);
	vsnprintf(r.msg, sizeof(r.msg), fmt, ap);
	va_end(ap);
	c_reply(&r, NULL, 0);
	return true;
}

static bool c_ok(int rc)
{
	struct sp_rep r;

	memset(&r, 0, sizeof(r));
	r.rc = rc;
	c_reply(&r, NULL, 0);
	return true;
}

/* ---- What the wire says -------------------------------------------- */

static struct peerinfo *peer_at(uint16_t sport, uint16_t dport, bool make)
{
	struct peerinfo *p;
	unsigned i;

	for (i = 0; i < SP_PEERS; i++) {
		p = &C.peers[i];
		if (p->used && p->sport == sport && p->dport == dport)
			return p;
	}
	if (!make)
		return NULL;
	p = &C.peers[C.peer_next++ % SP_PEERS];
	memset(p, 0, sizeof(*p));
	p->used = true;
	p->sport = sport;
	p->dport = dport;
	return p;
}

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | p[3];
}

/* INIT and INIT ACK: the fixed part (RFC 4960 §3.3.2, §3.3.3), then the
 * parameters, among them the Adaptation Layer Indication (RFC 5061
 * §4.2.6, type 0xC006). */
static void parse_init(const uint8_t *c, size_t clen, struct sp_wire *w)
{
	size_t off = 20;

	if (clen < 20)
		return;
	w->os = get16(c + 12);
	w->mis = get16(c + 14);
	while (off + 4 <= clen) {
		uint16_t pt = get16(c + off), pl = get16(c + off + 2);

		if (pl < 4 || off + pl > clen)
			break;
		if (pt == 0xc006 && pl >= 8) {
			w->adapt_seen = 1;
			w->adapt = get32(c + off + 4);
		}
		off += (size_t)(pl + 3) & ~(size_t)3;
	}
}

/* Every chunk of a packet that came in, before usrsctp sees it. */
static void parse_packet(const uint8_t *p, size_t n)
{
	size_t off = SP_COMMON_HDR;
	uint16_t sport, dport;

	if (n < SP_COMMON_HDR)
		return;
	sport = get16(p);
	dport = get16(p + 2);
	while (off + 4 <= n) {
		const uint8_t *c = p + off;
		size_t clen = get16(c + 2);
		struct sp_wire w;
		struct peerinfo *pi;

		if (clen < 4 || clen > n - off)
			break;
		memset(&w, 0, sizeof(w));
		w.type = c[0];
		w.flags = c[1];
		w.sport = sport;
		w.dport = dport;
		w.len = (uint16_t)clen;
		switch (w.type) {
		case 0:         /* DATA, RFC 4960 §3.3.1 */
			if (clen >= 16) {
				w.tsn = get32(c + 4);
				w.sid = get16(c + 8);
				w.ssn = get16(c + 10);
				memcpy(w.ppid, c + 12, 4);
				memcpy(w.head, c + 16,
				       clen - 16 < 4 ? clen - 16 : 4);
			}
			break;
		case 1:
		case 2:
			parse_init(c, clen, &w);
			pi = peer_at(sport, dport, true);
			pi->init_seen = true;
			pi->os = w.os;
			pi->mis = w.mis;
			pi->adapt_seen = w.adapt_seen;
			pi->adapt = w.adapt;
			break;
		case 6:         /* ABORT */
			peer_at(sport, dport, true)->abort = true;
			break;
		case 3:         /* SACK, HEARTBEAT, HEARTBEAT ACK, COOKIE */
		case 4:         /* ECHO and ACK: not logged */
		case 5:
		case 10:
		case 11:
			off += (clen + 3) & ~(size_t)3;
			continue;
		}
		if (C.nwire < SP_WIRE_MAX)
			C.wire[C.nwire++] = w;
		else
			C.wire_overflow = true;
		off += (clen + 3) & ~(size_t)3;
	}
}

/* ---- UDP sockets and links ----------------------------------------- */

static int us_new(bool listening, uint16_t connect_port, uint16_t *bound)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t alen = sizeof(a);
	int i, fd, sz = 4 << 20;

	for (i = 0; i < SP_USOCKS && C.us[i].used; i++)
		;
	if (i == SP_USOCKS)
		return -ENOBUFS;
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
	setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0)
		goto fail;
	if (connect_port) {
		a.sin_port = htons(connect_port);
		if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0)
			goto fail;
	}
	if (getsockname(fd, (struct sockaddr *)&a, &alen) < 0)
		goto fail;
	*bound = ntohs(a.sin_port);
	memset(&C.us[i], 0, sizeof(C.us[i]));
	C.us[i].used = true;
	C.us[i].fd = fd;
	C.us[i].listening = listening;
	return i;
fail:
	i = -errno;
	close(fd);
	return i;
}

static void us_ref(int u)
{
	C.us[u].refs++;
}

static void us_unref(int u)
{
	if (u >= 0 && C.us[u].refs && --C.us[u].refs == 0)
		C.us[u].free_at = now_ms() + SP_LINGER_MS;
}

static int link_new(int u, const struct sockaddr_in *remote)
{
	int i;

	for (i = 0; i < SP_LINKS && C.links[i].used; i++)
		;
	if (i == SP_LINKS)
		return -1;
	C.links[i].used = true;
	C.links[i].us = u;
	C.links[i].remote = *remote;
	if (!C.registered[i]) {
		usrsctp_register_address((void *)(uintptr_t)(i + 1));
		C.registered[i] = true;
	}
	return i;
}

static int link_find(int u, const struct sockaddr_in *from)
{
	int i;

	for (i = 0; i < SP_LINKS; i++) {
		const struct link *l = &C.links[i];

		if (l->used && l->us == u &&
		    l->remote.sin_port == from->sin_port &&
		    l->remote.sin_addr.s_addr == from->sin_addr.s_addr)
			return i;
	}
	return -1;
}

/* UDP sockets whose linger is over, with their links. */
static void us_sweep(int64_t now)
{
	int i, k;

	for (i = 0; i < SP_USOCKS; i++) {
		struct usock *u = &C.us[i];

		if (!u->used || u->refs || now < u->free_at)
			continue;
		for (k = 0; k < SP_LINKS; k++)
			if (C.links[k].used && C.links[k].us == i)
				C.links[k].used = false;
		close(u->fd);
		u->used = false;
	}
}

/* usrsctp hands out a packet: one datagram on the link (RFC 6951). */
static int c_output(void *addr, void *buf, size_t len, uint8_t tos,
		    uint8_t set_df)
{
	uintptr_t h = (uintptr_t)addr;
	struct link *l;

	(void)tos;
	(void)set_df;
	if (h < 1 || h > SP_LINKS)
		return 0;
	l = &C.links[h - 1];
	if (!l->used)
		return 0;               /* lost, as on a path */
	(void)!sendto(C.us[l->us].fd, buf, len, MSG_DONTWAIT | MSG_NOSIGNAL,
		      (struct sockaddr *)&l->remote, sizeof(l->remote));
	return 0;
}

static void us_readable(int u)
{
	int k;

	for (k = 0; k < 256; k++) {
		struct sockaddr_in from;
		socklen_t flen = sizeof(from);
		ssize_t n = recvfrom(C.us[u].fd, C.rx, sizeof(C.rx),
				     MSG_DONTWAIT, (struct sockaddr *)&from,
				     &flen);
		int l;

		if (n < 0)
			return;
		if (flen != sizeof(from) || from.sin_family != AF_INET)
			continue;
		l = link_find(u, &from);
		if (l < 0) {
			if (!C.us[u].listening)
				continue;
			l = link_new(u, &from);
			if (l < 0)
				continue;
		}
		parse_packet(C.rx, (size_t)n);
		usrsctp_conninput((void *)(uintptr_t)(l + 1), C.rx, (size_t)n,
				  0);
	}
}

/* ---- usrsctp sockets ----------------------------------------------- */

static int so_opt(struct socket *so, int level, int name, const void *v,
		  socklen_t len)
{
	return usrsctp_setsockopt(so, level, name, v, len) < 0 ? -errno : 0;
}

/* What sctp_usr.c sets, except where the options say otherwise: the
 * Adaptation Layer Indication (or none, or another), the stream counts,
 * no Nagle, the same path MTU, and the notifications read here. */
static int so_setup(struct socket *so, const struct sp_opts *o, bool init)
{
	static const uint16_t events[] = {
		SCTP_ASSOC_CHANGE, SCTP_ADAPTATION_INDICATION,
		SCTP_SHUTDOWN_EVENT,
	};
	struct sctp_paddrparams pp;
	int on = 1, rcv = o->rcvbuf ? o->rcvbuf : SP_DEF_RCVBUF;
	int snd = 256 * 1024, ret;
	size_t i;

	if (usrsctp_set_non_blocking(so, 1) < 0)
		return -errno;
	memset(&pp, 0, sizeof(pp));
	pp.spp_assoc_id = SCTP_FUTURE_ASSOC;
	pp.spp_pathmtu = SP_MTU - SP_COMMON_HDR;
	pp.spp_flags = SPP_PMTUD_DISABLE;
	if ((ret = so_opt(so, SOL_SOCKET, SO_RCVBUF, &rcv, sizeof(rcv))) ||
	    (ret = so_opt(so, SOL_SOCKET, SO_SNDBUF, &snd, sizeof(snd))) ||
	    (ret = so_opt(so, IPPROTO_SCTP, SCTP_NODELAY, &on, sizeof(on))) ||
	    (ret = so_opt(so, IPPROTO_SCTP, SCTP_RECVRCVINFO, &on,
			  sizeof(on))) ||
	    (ret = so_opt(so, IPPROTO_SCTP, SCTP_PEER_ADDR_PARAMS, &pp,
			  sizeof(pp))))
		return ret;
	if (init) {
		struct sctp_initmsg im = {
			.sinit_num_ostreams = o->out_streams ? o->out_streams :
					      SP_DEF_STREAMS,
			.sinit_max_attempts = 4,
			.sinit_max_init_timeo = 2000,
		};
		struct sctp_setadaptation ad = {
			.ssb_adaptation_ind = o->adapt == SP_ADAPT_SEND_VALUE ?
					      o->adapt_value : SP_ADAPT_DDP,
		};

		im.sinit_max_instreams = o->in_streams ? o->in_streams :
					 im.sinit_num_ostreams;
		if ((ret = so_opt(so, IPPROTO_SCTP, SCTP_INITMSG, &im,
				  sizeof(im))))
			return ret;
		/* usrsctp puts the parameter in INIT and INIT ACK only
		 * when the socket has one. */
		if (o->adapt != SP_ADAPT_SEND_NONE &&
		    (ret = so_opt(so, IPPROTO_SCTP, SCTP_ADAPTATION_LAYER,
				  &ad, sizeof(ad))))
			return ret;
	}
	for (i = 0; i < sizeof(events) / sizeof(events[0]); i++) {
		struct sctp_event ev = {
			.se_assoc_id = SCTP_FUTURE_ASSOC,
			.se_type = events[i],
			.se_on = 1,
		};

		if ((ret = so_opt(so, IPPROTO_SCTP, SCTP_EVENT, &ev,
				  sizeof(ev))))
			return ret;
	}
	return 0;
}

static int so_bind(struct socket *so, uint16_t *port)
{
	struct sockaddr_conn sc;
	int i;

	for (i = 0; i < 1000; i++) {
		memset(&sc, 0, sizeof(sc));
		sc.sconn_family = AF_CONN;
		sc.sconn_port = htons(C.next_port);
		*port = C.next_port++;
		if (C.next_port < SP_FIRST_PORT)
			C.next_port = SP_FIRST_PORT;
		if (usrsctp_bind(so, (struct sockaddr *)&sc, sizeof(sc)) == 0)
			return 0;
		if (errno != EADDRINUSE)
			return -errno;
	}
	return -EADDRINUSE;
}

static int slot_new(int kind)
{
	int i;

	for (i = 0; i < SP_SLOTS; i++) {
		struct cslot *s = &C.slot[i];

		if (s->kind == K_FREE) {
			memset(s, 0, sizeof(*s));
			s->kind = kind;
			s->us = -1;
			s->kq_tail = &s->kq;
			return i;
		}
	}
	return -1;
}

static struct cslot *slot_get(int id, int kind)
{
	if (id < 0 || id >= SP_SLOTS || C.slot[id].kind != kind)
		return NULL;
	return &C.slot[id];
}

static void slot_free(struct cslot *s, bool abort)
{
	struct kept *k;

	if (s->so) {
		if (abort) {
			struct linger lg = { .l_onoff = 1, .l_linger = 0 };

			/* A zero linger makes close an ABORT (RFC 4960
			 * §9.1). */
			usrsctp_setsockopt(s->so, SOL_SOCKET, SO_LINGER, &lg,
					   sizeof(lg));
		}
		usrsctp_close(s->so);
	}
	us_unref(s->us);
	while ((k = s->kq)) {
		s->kq = k->next;
		free(k);
	}
	free(s->part);
	memset(s, 0, sizeof(*s));
}

static bool slot_abort_rcvd(const struct cslot *s)
{
	const struct peerinfo *pi = peer_at(s->st.pport, s->st.lport, false);

	return pi && pi->abort;
}

/* The association is over (err as errno: 0 after SHUTDOWN). */
static void slot_down(struct cslot *s, int err)
{
	if (s->st.down)
		return;
	s->st.down = true;
	s->st.abort_rcvd = slot_abort_rcvd(s);
	s->st.down_err = err;
}

static void on_notif(struct cslot *s, const uint8_t *buf, size_t len)
{
	const union sctp_notification *n = (const void *)buf;

	if (len < sizeof(n->sn_header))
		return;
	switch (n->sn_header.sn_type) {
	case SCTP_ASSOC_CHANGE:
		if (len < sizeof(n->sn_assoc_change))
			return;
		switch (n->sn_assoc_change.sac_state) {
		case SCTP_COMM_UP:
			s->st.up = true;
			s->st.in_streams =
				n->sn_assoc_change.sac_inbound_streams;
			s->st.out_streams =
				n->sn_assoc_change.sac_outbound_streams;
			break;
		case SCTP_COMM_LOST:
			/* The peer's ABORT, or retransmissions gave up. */
			slot_down(s, slot_abort_rcvd(s) ? ECONNRESET :
				  ETIMEDOUT);
			break;
		case SCTP_CANT_STR_ASSOC:
			slot_down(s, slot_abort_rcvd(s) ? ECONNREFUSED :
				  ETIMEDOUT);
			break;
		case SCTP_SHUTDOWN_COMP:
			slot_down(s, 0);
			break;
		}
		break;
	case SCTP_ADAPTATION_INDICATION:
		if (len >= sizeof(n->sn_adaptation_event)) {
			s->st.notif_adapt_seen = true;
			s->st.notif_adapt =
				n->sn_adaptation_event.sai_adaptation_ind;
		}
		break;
	}
}

/* Reads what usrsctp has for an association: notifications go into its
 * state, one whole message is returned in *out.  1: a message, 0:
 * nothing now, -1: nothing more will come. */
static int so_take(struct cslot *s, struct kept **out)
{
	if (s->gone)
		return -1;
	if (!s->part) {
		s->part = malloc(SP_MSG_MAX);
		if (!s->part)
			return 0;
	}
	for (;;) {
		struct sctp_rcvinfo ri;
		struct sockaddr_conn from;
		socklen_t ilen = sizeof(ri), flen = sizeof(from);
		unsigned itype = 0;
		int fl = 0;
		ssize_t n;
		struct kept *k;

		memset(&ri, 0, sizeof(ri));
		n = usrsctp_recvv(s->so, s->part + s->plen,
				  SP_MSG_MAX - s->plen, (struct sockaddr *)&from,
				  &flen, &ri, &ilen, &itype, &fl);
		if (n < 0 && (errno == EWOULDBLOCK || errno == EAGAIN))
			return 0;
		if (n <= 0) {
			int e = n < 0 ? errno : 0;

			s->gone = true;
			slot_down(s, e == ENOTCONN ? 0 : e);
			return -1;
		}
		s->plen += (size_t)n;
		if (!(fl & MSG_EOR)) {
			if (s->plen < SP_MSG_MAX)
				continue;
			/* Longer than any message of DDP over SCTP. */
			s->gone = true;
			slot_down(s, EMSGSIZE);
			return -1;
		}
		if (fl & MSG_NOTIFICATION) {
			on_notif(s, s->part, s->plen);
			s->plen = 0;
			continue;
		}
		k = malloc(sizeof(*k) + s->plen);
		if (!k)
			return 0;
		k->next = NULL;
		k->r.sid = itype == SCTP_RECVV_RCVINFO ? ri.rcv_sid : 0xffff;
		k->r.flags = itype == SCTP_RECVV_RCVINFO ? ri.rcv_flags : 0;
		k->r.ppid = ntohl(ri.rcv_ppid);
		k->r.len = (uint32_t)s->plen;
		memcpy(k->data, s->part, s->plen);
		s->plen = 0;
		*out = k;
		return 1;
	}
}

/* Reads everything there is, keeping the messages. */
static void so_pump(struct cslot *s)
{
	struct kept *k;

	while (so_take(s, &k) == 1) {
		*s->kq_tail = k;
		s->kq_tail = &k->next;
	}
}

static void slot_state(struct cslot *s, struct sp_state *st)
{
	struct peerinfo *pi = peer_at(s->st.pport, s->st.lport, false);

	if (pi) {
		s->st.peer_init_seen = pi->init_seen;
		s->st.peer_os = pi->os;
		s->st.peer_mis = pi->mis;
		s->st.peer_adapt_seen = pi->adapt_seen;
		s->st.peer_adapt = pi->adapt;
		s->st.abort_rcvd = pi->abort;
	}
	*st = s->st;
}

static bool reply_state(struct cslot *s, int rc, int id)
{
	struct sp_rep r;

	memset(&r, 0, sizeof(r));
	r.rc = rc;
	r.id = id;
	slot_state(s, &r.st);
	c_reply(&r, NULL, 0);
	return true;
}

/* ---- Requests ------------------------------------------------------ */

/* Requests return true once answered. */
static bool op_connect(void)
{
	const struct sp_req *q = &C.req;
	struct sockaddr_in remote = { .sin_family = AF_INET };
	struct sockaddr_conn sc;
	struct cslot *s;
	uint16_t uport;
	int id, u, l, ret;

	id = slot_new(K_ASSOC);
	if (id < 0)
		return c_fail(ENOBUFS, "sctppeer: no free slot");
	s = &C.slot[id];
	u = us_new(false, q->udp_port, &uport);
	if (u < 0) {
		slot_free(s, false);
		return c_fail(-u, "sctppeer: UDP socket: %s", strerror(-u));
	}
	s->us = u;
	us_ref(u);
	remote.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	remote.sin_port = htons(q->udp_port);
	l = link_new(u, &remote);
	s->so = usrsctp_socket(AF_CONN, SOCK_STREAM, IPPROTO_SCTP, NULL, NULL,
			       0, NULL);
	if (l < 0 || !s->so) {
		slot_free(s, false);
		return c_fail(ENOBUFS, "sctppeer: no link or socket");
	}
	ret = so_setup(s->so, &q->o, true);
	if (!ret)
		ret = so_bind(s->so, &s->st.lport);
	if (ret) {
		slot_free(s, false);
		return c_fail(-ret, "sctppeer: socket set-up: %s",
			      strerror(-ret));
	}
	s->st.pport = q->sctp_port;
	memset(&sc, 0, sizeof(sc));
	sc.sconn_family = AF_CONN;
	sc.sconn_port = htons(q->sctp_port);
	sc.sconn_addr = (void *)(uintptr_t)(l + 1);
	if (usrsctp_connect(s->so, (struct sockaddr *)&sc, sizeof(sc)) < 0 &&
	    errno != EINPROGRESS) {
		ret = errno;
		slot_free(s, false);
		return c_fail(ret, "sctppeer: connect: %s", strerror(ret));
	}
	C.req.id = id;          /* waits for up (poll_connect) */
	return false;
}

static bool poll_connect(void)
{
	struct cslot *s = slot_get(C.req.id, K_ASSOC);

	if (!s)
		return c_fail(EINVAL, "sctppeer: slot lost");
	so_pump(s);
	if (s->st.up || s->st.down) {
		reply_state(s, 0, C.req.id);
		return true;
	}
	return false;
}

static bool op_listen(void)
{
	struct sp_rep r;
	struct cslot *s;
	uint16_t uport;
	int id, u, ret;

	id = slot_new(K_LSN);
	if (id < 0)
		return c_fail(ENOBUFS, "sctppeer: no free slot");
	s = &C.slot[id];
	u = us_new(true, 0, &uport);
	if (u < 0) {
		slot_free(s, false);
		return c_fail(-u, "sctppeer: UDP socket: %s", strerror(-u));
	}
	s->us = u;
	us_ref(u);
	s->so = usrsctp_socket(AF_CONN, SOCK_STREAM, IPPROTO_SCTP, NULL, NULL,
			       0, NULL);
	if (!s->so) {
		slot_free(s, false);
		return c_fail(ENOBUFS, "sctppeer: no socket");
	}
	ret = so_setup(s->so, &C.req.o, true);
	if (!ret)
		ret = so_bind(s->so, &s->st.lport);
	if (!ret && usrsctp_listen(s->so, 16) < 0)
		ret = -errno;
	if (ret) {
		slot_free(s, false);
		return c_fail(-ret, "sctppeer: listen: %s", strerror(-ret));
	}
	memset(&r, 0, sizeof(r));
	r.id = id;
	r.sctp_port = s->st.lport;
	r.udp_port = uport;
	c_reply(&r, NULL, 0);
	return true;
}

static bool poll_accept(void)
{
	struct cslot *l = slot_get(C.req.id, K_LSN), *s;
	struct sockaddr *addrs = NULL;
	struct sctp_status ss;
	socklen_t slen = sizeof(ss);
	struct socket *so;
	int id, n;

	if (!l)
		return c_fail(EINVAL, "sctppeer: not a listener");
	so = usrsctp_accept(l->so, NULL, NULL);
	if (!so)
		return false;
	id = slot_new(K_ASSOC);
	if (id < 0) {
		usrsctp_close(so);
		return c_fail(ENOBUFS, "sctppeer: no free slot");
	}
	s = &C.slot[id];
	s->so = so;
	s->us = l->us;
	us_ref(l->us);
	so_setup(so, &C.req.o, false);
	s->st.lport = l->st.lport;
	n = usrsctp_getpaddrs(so, 0, &addrs);
	if (n >= 1 && addrs->sa_family == AF_CONN) {
		struct sockaddr_conn sc;

		memcpy(&sc, addrs, sizeof(sc));
		s->st.pport = ntohs(sc.sconn_port);
	}
	if (n > 0)
		usrsctp_freepaddrs(addrs);
	/* Accepted: established (its COMM_UP may still be queued). */
	s->st.up = true;
	memset(&ss, 0, sizeof(ss));
	if (usrsctp_getsockopt(so, IPPROTO_SCTP, SCTP_STATUS, &ss, &slen) == 0) {
		s->st.in_streams = ss.sstat_instrms;
		s->st.out_streams = ss.sstat_outstrms;
	}
	reply_state(s, 0, id);
	return true;
}

static bool poll_send(void)
{
	const struct sp_req *q = &C.req;
	struct cslot *s = slot_get(q->id, K_ASSOC);
	struct sctp_sndinfo si = {
		.snd_sid = q->sid,
		.snd_flags = q->flags ? SCTP_UNORDERED : 0,
		.snd_ppid = htonl(q->ppid),
	};

	if (!s)
		return c_fail(EINVAL, "sctppeer: no association %d", q->id);
	if (usrsctp_sendv(s->so, C.req_data, q->len, NULL, 0, &si, sizeof(si),
			  SCTP_SENDV_SNDINFO, 0) >= 0)
		return c_ok(0);
	if (errno == EWOULDBLOCK || errno == EAGAIN || errno == ENOBUFS)
		return false;
	return c_fail(errno, "sctppeer: send of %u octets on stream %u: %s",
		      q->len, q->sid, strerror(errno));
}

/* Hands over what was kept, then what usrsctp has, up to a batch. */
static bool poll_recv(void)
{
	struct cslot *s = slot_get(C.req.id, K_ASSOC);
	size_t at = 0;
	int count = 0;

	if (!s)
		return c_fail(EINVAL, "sctppeer: no association %d",
			      C.req.id);
	for (;;) {
		struct kept *k = s->kq;

		if (k) {
			s->kq = k->next;
			if (!s->kq)
				s->kq_tail = &s->kq;
		} else if (so_take(s, &k) != 1) {
			break;
		}
		memcpy(C.obuf + sizeof(struct sp_rep) + at, &k->r,
		       sizeof(k->r));
		memcpy(C.obuf + sizeof(struct sp_rep) + at + sizeof(k->r),
		       k->data, k->r.len);
		at += sizeof(k->r) + k->r.len;
		count++;
		free(k);
		if (at >= SP_RECV_BATCH)
			break;
	}
	if (count) {
		struct sp_rep *r = (struct sp_rep *)C.obuf;

		memset(r, 0, sizeof(*r));
		r->rc = count;
		slot_state(s, &r->st);
		c_reply(r, C.obuf + sizeof(*r), at);
		return true;
	}
	if (s->st.down || s->gone) {
		c_fail(s->st.down_err && s->st.down_err != ENOTCONN ?
		       ECONNRESET : ENOTCONN, "the association is over (%s)",
		       s->st.down_err ? strerror(s->st.down_err) :
		       "shut down");
		return true;
	}
	return false;
}

static bool poll_wait_down(void)
{
	struct cslot *s = slot_get(C.req.id, K_ASSOC);

	if (!s)
		return c_fail(EINVAL, "sctppeer: no association %d",
			      C.req.id);
	so_pump(s);
	if (s->st.down) {
		reply_state(s, 0, C.req.id);
		return true;
	}
	return false;
}

static bool poll_busy(void)
{
	switch (C.req.op) {
	case OP_CONNECT:
		return poll_connect();
	case OP_ACCEPT:
		return poll_accept();
	case OP_SEND:
		return poll_send();
	case OP_RECV:
		return poll_recv();
	case OP_WAIT_DOWN:
		return poll_wait_down();
	}
	return true;
}

static void timeout_busy(void)
{
	struct cslot *s = C.req.id >= 0 && C.req.id < SP_SLOTS ?
			  &C.slot[C.req.id] : NULL;
	struct sp_rep r;

	memset(&r, 0, sizeof(r));
	r.rc = -ETIMEDOUT;
	r.id = C.req.id;
	if (s && s->kind == K_ASSOC)
		slot_state(s, &r.st);
	snprintf(r.msg, sizeof(r.msg), "nothing within %d ms",
		 C.req.timeout_ms);
	c_reply(&r, NULL, 0);
}

static bool op_wire(void)
{
	struct sp_rep *r = (struct sp_rep *)C.obuf;
	size_t from = C.req.ival > 0 ? (size_t)C.req.ival : 0, n = 0;

	memset(r, 0, sizeof(*r));
	if (from < C.nwire)
		n = C.nwire - from < SP_WIRE_BATCH ? C.nwire - from :
		    SP_WIRE_BATCH;
	r->n = (uint32_t)n;
	r->total = (uint32_t)C.nwire;
	r->overflow = C.wire_overflow;
	c_reply(r, C.wire + from, n * sizeof(struct sp_wire));
	return true;
}

static bool c_request(size_t got)
{
	const struct sp_req *q = &C.req;
	struct cslot *s;
	int ret;

	memcpy(&C.req, C.rbuf, sizeof(C.req));
	C.req_data = C.rbuf + sizeof(C.req);
	if (got != sizeof(C.req) + C.req.len)
		return c_fail(EINVAL, "sctppeer: request of %zu octets", got);
	C.busy = true;
	C.deadline = now_ms() + (q->timeout_ms > 0 ? q->timeout_ms : 0);
	switch (q->op) {
	case OP_CONNECT:
		return op_connect() || poll_busy();
	case OP_LISTEN:
		return op_listen();
	case OP_STATE:
		s = slot_get(q->id, K_ASSOC);
		if (!s)
			return c_fail(EINVAL, "sctppeer: no association %d",
				      q->id);
		return reply_state(s, 0, q->id);
	case OP_RCVBUF:
		s = slot_get(q->id, K_ASSOC);
		if (!s)
			return c_fail(EINVAL, "sctppeer: no association %d",
				      q->id);
		ret = so_opt(s->so, SOL_SOCKET, SO_RCVBUF, &q->ival,
			     sizeof(q->ival));
		if (ret)
			return c_fail(-ret, "sctppeer: SO_RCVBUF: %s",
				      strerror(-ret));
		return c_ok(0);
	case OP_ABORT:
	case OP_CLOSE:
		s = q->id >= 0 && q->id < SP_SLOTS ? &C.slot[q->id] : NULL;
		if (!s || s->kind == K_FREE)
			return c_fail(EINVAL, "sctppeer: no slot %d", q->id);
		slot_free(s, q->op == OP_ABORT);
		return c_ok(0);
	case OP_WIRE:
		return op_wire();
	case OP_WIRE_CLEAR:
		C.nwire = 0;
		C.wire_overflow = false;
		return c_ok(0);
	case OP_ACCEPT:
	case OP_SEND:
	case OP_RECV:
	case OP_WAIT_DOWN:
		/* They wait: answered now, or by the loop. */
		return poll_busy();
	default:
		return c_fail(EINVAL, "sctppeer: request %u", q->op);
	}
}

static void c_tick(void)
{
	int64_t now = now_ms();

	if (now - C.last_tick >= SP_TICK_MS) {
		usrsctp_handle_timers((uint32_t)(now - C.last_tick));
		C.last_tick = now;
		us_sweep(now);
	}
}

static void child_main(int ctl) __attribute__((noreturn));
static void child_main(int ctl)
{
	struct pollfd pf[1 + SP_USOCKS];
	int map[1 + SP_USOCKS];

	C.ctl = ctl;
	C.next_port = SP_FIRST_PORT;
	C.wire = calloc(SP_WIRE_MAX, sizeof(*C.wire));
	C.rbuf = malloc(SP_REQ_MAX);
	C.obuf = malloc(SP_REP_MAX);
	if (!C.wire || !C.rbuf || !C.obuf)
		_exit(1);
	usrsctp_init_nothreads(0, c_output, NULL);
	/* As sctp_usr.c: features DDP does not use stay off. */
	usrsctp_sysctl_set_sctp_auto_asconf(0);
	usrsctp_sysctl_set_sctp_asconf_enable(0);
	usrsctp_sysctl_set_sctp_auth_enable(0);
	usrsctp_sysctl_set_sctp_pr_enable(0);
	usrsctp_sysctl_set_sctp_reconfig_enable(0);
	usrsctp_sysctl_set_sctp_nrsack_enable(0);
	usrsctp_sysctl_set_sctp_pktdrop_enable(0);
	C.last_tick = now_ms();
	for (;;) {
		int n = 0, i, r, wait = SP_TICK_MS;

		pf[n].fd = ctl;
		pf[n].events = C.busy ? 0 : POLLIN;
		map[n++] = -1;
		for (i = 0; i < SP_USOCKS; i++) {
			if (!C.us[i].used)
				continue;
			pf[n].fd = C.us[i].fd;
			pf[n].events = POLLIN;
			map[n++] = i;
		}
		if (C.busy && C.deadline - now_ms() < wait)
			wait = C.deadline > now_ms() ?
			       (int)(C.deadline - now_ms()) : 0;
		r = poll(pf, (nfds_t)n, wait);
		if (r < 0 && errno != EINTR)
			_exit(1);
		for (i = 1; r > 0 && i < n; i++)
			if (pf[i].revents & POLLIN)
				us_readable(map[i]);
		c_tick();
		if (C.busy && poll_busy())
			continue;
		if (C.busy && now_ms() >= C.deadline) {
			timeout_busy();
			continue;
		}
		if (!C.busy && r > 0 && (pf[0].revents & (POLLIN | POLLHUP))) {
			ssize_t got = recv(ctl, C.rbuf, SP_REQ_MAX,
					   MSG_DONTWAIT);

			if (got == 0)
				_exit(0);       /* the test process ended */
			if (got > 0)
				c_request((size_t)got);
		}
	}
}

/* =================================================================== */
/* The test process's side                                              */
/* =================================================================== */

struct pmsg {
	struct pmsg *next;
	struct sp_msg m;
};

static int ctl_fd = -1;
static pid_t child;
static uint32_t seq;
static struct pmsg *stash[SP_SLOTS];   /* received, not yet taken */

bool sp_booted(void)
{
	return ctl_fd >= 0;
}

static void sp_end(void)
{
	int64_t until = now_ms() + 2000;
	int st;

	if (ctl_fd < 0)
		return;
	close(ctl_fd);
	ctl_fd = -1;
	/* The child ends on the closed socket; bounded. */
	while (waitpid(child, &st, WNOHANG) == 0) {
		struct timespec ts = { 0, 5 * 1000000L };

		if (now_ms() > until) {
			kill(child, SIGKILL);
			waitpid(child, &st, 0);
			break;
		}
		nanosleep(&ts, NULL);
	}
}

int sp_boot(void)
{
	int sv[2], sz = SP_SOCKBUF;
	pid_t pid;

	if (ctl_fd >= 0)
		return 0;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
		int e = errno;

		rp_fail("socketpair: %s", strerror(e));
		return -e;
	}
	setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
	setsockopt(sv[0], SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
	setsockopt(sv[1], SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
	setsockopt(sv[1], SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		int e = errno;

		close(sv[0]);
		close(sv[1]);
		rp_fail("fork: %s", strerror(e));
		return -e;
	}
	if (pid == 0) {
		close(sv[0]);
		/* Ends with the test process, whatever ends it. */
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		if (getppid() == 1)
			_exit(0);
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		child_main(sv[1]);
	}
	close(sv[1]);
	ctl_fd = sv[0];
	child = pid;
	atexit(sp_end);
	return 0;
}

/* One request and its reply.  wait_ms: how long the child may take. */
static int call(struct sp_req *q, const void *data, size_t len,
		struct sp_rep *r, uint8_t **rdata, int wait_ms)
{
	struct iovec iov[2] = {
		{ .iov_base = q, .iov_len = sizeof(*q) },
		{ .iov_base = (void *)data, .iov_len = len },
	};
	struct msghdr mh = { .msg_iov = iov, .msg_iovlen = len ? 2 : 1 };
	int64_t deadline = now_ms() + wait_ms + rp_timeout_ms();
	uint8_t *buf;

	if (rdata)
		*rdata = NULL;
	if (ctl_fd < 0) {
		rp_fail("the raw SCTP peer is not running (sp_boot)");
		return -ENOTCONN;
	}
	if (len > SP_MSG_MAX) {
		rp_fail("a message of %zu octets", len);
		return -EMSGSIZE;
	}
	q->seq = ++seq;
	q->len = (uint32_t)len;
	if (sendmsg(ctl_fd, &mh, MSG_NOSIGNAL) < 0) {
		rp_fail("to the raw SCTP peer: %s", strerror(errno));
		return -EPIPE;
	}
	buf = malloc(SP_REP_MAX);
	if (!buf) {
		rp_fail("out of memory");
		return -ENOMEM;
	}
	for (;;) {
		struct pollfd p = { .fd = ctl_fd, .events = POLLIN };
		int64_t left = deadline - now_ms();
		ssize_t n;

		if (left <= 0 || poll(&p, 1, (int)left) <= 0) {
			free(buf);
			rp_fail("the raw SCTP peer did not answer within %d "
				"ms", wait_ms + rp_timeout_ms());
			return -ETIMEDOUT;
		}
		n = recv(ctl_fd, buf, SP_REP_MAX, 0);
		if (n <= 0) {
			free(buf);
			rp_fail("the raw SCTP peer is gone");
			return -EPIPE;
		}
		if ((size_t)n < sizeof(*r))
			continue;
		memcpy(r, buf, sizeof(*r));
		if (r->seq != q->seq)
			continue;       /* a late answer to a caller gone */
		if ((size_t)n != sizeof(*r) + r->len) {
			free(buf);
			rp_fail("a reply of %zd octets from the raw SCTP peer",
				n);
			return -EPROTO;
		}
		break;
	}
	if (r->rc < 0)
		rp_fail("%s", r->msg[0] ? r->msg : strerror(-r->rc));
	if (rdata && r->len)
		*rdata = buf;
	else
		free(buf);
	return r->rc;
}

static int tmo(int timeout_ms)
{
	return timeout_ms > 0 ? timeout_ms : rp_timeout_ms();
}

int sp_connect(const struct sp_opts *o, uint16_t sctp_port,
	       uint16_t udp_port, int *id)
{
	struct sp_req q = { .op = OP_CONNECT, .sctp_port = sctp_port,
			    .udp_port = udp_port };
	struct sp_rep r;
	int rc;

	if (o)
		q.o = *o;
	q.timeout_ms = rp_timeout_ms();
	rc = call(&q, NULL, 0, &r, NULL, q.timeout_ms);
	*id = r.id;
	if (rc == -ETIMEDOUT)
		rp_fail("the association to SCTP port %u (UDP %u) was not up "
			"within %d ms", sctp_port, udp_port, q.timeout_ms);
	return rc < 0 ? rc : 0;
}

int sp_listen(const struct sp_opts *o, int *lid, uint16_t *sctp_port,
	      uint16_t *udp_port)
{
	struct sp_req q = { .op = OP_LISTEN };
	struct sp_rep r;
	int rc;

	if (o)
		q.o = *o;
	rc = call(&q, NULL, 0, &r, NULL, 0);
	if (rc < 0)
		return rc;
	*lid = r.id;
	*sctp_port = r.sctp_port;
	*udp_port = r.udp_port;
	return 0;
}

int sp_accept(int lid, int *id, int timeout_ms)
{
	struct sp_req q = { .op = OP_ACCEPT, .id = lid };
	struct sp_rep r;
	int rc;

	q.timeout_ms = tmo(timeout_ms);
	rc = call(&q, NULL, 0, &r, NULL, q.timeout_ms);
	if (rc == -ETIMEDOUT)
		rp_fail("no association to accept within %d ms",
			q.timeout_ms);
	if (rc < 0)
		return rc;
	*id = r.id;
	return 0;
}

int sp_send(int id, uint16_t sid, uint32_t ppid, bool unordered,
	    const void *buf, size_t len)
{
	struct sp_req q = { .op = OP_SEND, .id = id, .sid = sid,
			    .ppid = ppid, .flags = unordered };
	struct sp_rep r;
	int rc;

	q.timeout_ms = rp_timeout_ms();
	rc = call(&q, buf, len, &r, NULL, q.timeout_ms);
	if (rc == -ETIMEDOUT)
		rp_fail("a message of %zu octets on stream %u could not be "
			"sent within %d ms (send buffer full)", len, sid,
			q.timeout_ms);
	return rc < 0 ? rc : 0;
}

static void stash_add(int id, const struct sp_rec *rec, const uint8_t *d)
{
	struct pmsg *p = calloc(1, sizeof(*p)), **pp;

	if (!p)
		abort();
	p->m.sid = rec->sid;
	p->m.flags = rec->flags;
	p->m.ppid = rec->ppid;
	p->m.len = rec->len;
	p->m.data = malloc(rec->len ? rec->len : 1);
	if (!p->m.data)
		abort();
	memcpy(p->m.data, d, rec->len);
	for (pp = &stash[id]; *pp; pp = &(*pp)->next)
		;
	*pp = p;
}

static bool stash_take(int id, int sid, struct sp_msg *m)
{
	struct pmsg **pp, *p;

	for (pp = &stash[id]; (p = *pp); pp = &p->next) {
		if (sid >= 0 && p->m.sid != sid)
			continue;
		*pp = p->next;
		*m = p->m;
		free(p);
		return true;
	}
	return false;
}

static void stash_drop(int id)
{
	struct sp_msg m;

	while (stash_take(id, -1, &m))
		sp_msg_free(&m);
}

bool sp_pending(int id, int sid)
{
	struct pmsg *p;

	if (id < 0 || id >= SP_SLOTS)
		return false;
	for (p = stash[id]; p; p = p->next)
		if (sid < 0 || p->m.sid == sid)
			return true;
	return false;
}

int sp_recv(int id, int sid, struct sp_msg *m, int timeout_ms)
{
	int64_t deadline = now_ms() + tmo(timeout_ms);

	memset(m, 0, sizeof(*m));
	if (id < 0 || id >= SP_SLOTS) {
		rp_fail("no association %d", id);
		return -EINVAL;
	}
	for (;;) {
		struct sp_req q = { .op = OP_RECV, .id = id };
		struct sp_rep r;
		uint8_t *d = NULL;
		size_t at = 0;
		int64_t left;
		int rc, k;

		if (stash_take(id, sid, m))
			return 0;
		left = deadline - now_ms();
		if (left <= 0) {
			rp_fail("nothing received on stream %d within %d ms",
				sid, tmo(timeout_ms));
			return -ETIMEDOUT;
		}
		q.timeout_ms = (int)left;
		rc = call(&q, NULL, 0, &r, &d, q.timeout_ms);
		if (rc == -ETIMEDOUT) {
			rp_fail("nothing received on stream %d within %d ms",
				sid, tmo(timeout_ms));
			return rc;
		}
		if (rc < 0)
			return rc;
		for (k = 0; k < rc && d; k++) {
			struct sp_rec rec;
			const uint8_t *p = d + sizeof(struct sp_rep) + at;

			memcpy(&rec, p, sizeof(rec));
			stash_add(id, &rec, p + sizeof(rec));
			at += sizeof(rec) + rec.len;
		}
		free(d);
	}
}

int sp_state(int id, struct sp_state *st)
{
	struct sp_req q = { .op = OP_STATE, .id = id };
	struct sp_rep r;
	int rc = call(&q, NULL, 0, &r, NULL, 0);

	if (rc >= 0)
		*st = r.st;
	return rc < 0 ? rc : 0;
}

int sp_wait_down(int id, int timeout_ms, struct sp_state *st)
{
	struct sp_req q = { .op = OP_WAIT_DOWN, .id = id };
	struct sp_rep r;
	int rc;

	q.timeout_ms = tmo(timeout_ms);
	rc = call(&q, NULL, 0, &r, NULL, q.timeout_ms);
	if (st)
		*st = r.st;
	if (rc == -ETIMEDOUT)
		rp_fail("the association still up after %d ms",
			q.timeout_ms);
	return rc < 0 ? rc : 0;
}

int sp_set_rcvbuf(int id, int bytes)
{
	struct sp_req q = { .op = OP_RCVBUF, .id = id, .ival = bytes };
	struct sp_rep r;
	int rc = call(&q, NULL, 0, &r, NULL, 0);

	return rc < 0 ? rc : 0;
}

static int end_slot(int id, uint32_t op)
{
	struct sp_req q = { .op = op, .id = id };
	struct sp_rep r;
	int rc;

	if (id >= 0 && id < SP_SLOTS)
		stash_drop(id);
	rc = call(&q, NULL, 0, &r, NULL, 0);
	return rc < 0 ? rc : 0;
}

int sp_abort(int id)
{
	return end_slot(id, OP_ABORT);
}

int sp_close(int id)
{
	return end_slot(id, OP_CLOSE);
}

int sp_wire_get(struct sp_wire **out, size_t *n, bool *overflow)
{
	struct sp_wire *w = NULL;
	size_t have = 0;

	*out = NULL;
	*n = 0;
	for (;;) {
		struct sp_req q = { .op = OP_WIRE, .ival = (int32_t)have };
		struct sp_rep r;
		uint8_t *d = NULL;
		struct sp_wire *nw;
		int rc = call(&q, NULL, 0, &r, &d, 0);

		if (rc < 0) {
			free(w);
			return rc;
		}
		*overflow = r.overflow;
		if (r.n) {
			nw = realloc(w, (have + r.n) * sizeof(*w));
			if (!nw) {
				free(w);
				free(d);
				rp_fail("out of memory");
				return -ENOMEM;
			}
			w = nw;
			memcpy(w + have, d + sizeof(struct sp_rep),
			       r.n * sizeof(*w));
			have += r.n;
		}
		free(d);
		if (!r.n || have >= r.total)
			break;
	}
	*out = w;
	*n = have;
	return 0;
}

int sp_wire_clear(void)
{
	struct sp_req q = { .op = OP_WIRE_CLEAR };
	struct sp_rep r;
	int rc = call(&q, NULL, 0, &r, NULL, 0);

	return rc < 0 ? rc : 0;
}
