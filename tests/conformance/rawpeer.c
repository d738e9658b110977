/*
 * The raw iWARP peer of the conformance tests (see rawpeer.h).
 */
#include "rawpeer.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "sctppeer.h"
#include "wire/crc32c.h"

/* ---- Messages and time ------------------------------------------------ */

static _Thread_local char rp_msg[1024];

const char *rp_err(void)
{
	return rp_msg[0] ? rp_msg : "(no message)";
}

int rp_fail(const char *fmt, ...)
{
	char tmp[sizeof(rp_msg)];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	memcpy(rp_msg, tmp, sizeof(rp_msg));
	return -1;
}

int rp_timeout_ms(void)
{
	const char *e = getenv("UIW_TEST_TIMEOUT_MS");
	long v;

	if (e && *e) {
		v = strtol(e, NULL, 10);
		if (v > 0 && v < 3600 * 1000)
			return (int)v;
	}
	return RP_TIMEOUT_MS_DEFAULT;
}

int64_t rp_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int left_ms(int64_t deadline)
{
	int64_t l = deadline - rp_now_ms();

	return l > 0 ? (int)l : 0;
}

const char *rp_hex(const void *p, size_t n, char *buf, size_t cap)
{
	const uint8_t *b = p;
	size_t i, at = 0;

	if (!cap)
		return buf;
	buf[0] = 0;
	for (i = 0; i < n && i < 64 && at + 4 < cap; i++)
		at += (size_t)snprintf(buf + at, cap - at, "%s%02x",
				       i && i % 4 == 0 ? " " : "", b[i]);
	if (i < n && at + 4 < cap)
		snprintf(buf + at, cap - at, "...");
	return buf;
}

/* ---- Sockets ----------------------------------------------------------- */

static int set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return rp_fail("fcntl: %s", strerror(errno));
	return 0;
}

static int conn_init(struct rp_conn *c, int fd)
{
	int one = 1;

	memset(c, 0, sizeof(*c));
	c->fd = fd;
	c->msn[0] = c->msn[1] = c->msn[2] = c->msn[3] = 1;
	c->rcap = 1 << 17;
	c->rbuf = malloc(c->rcap);
	if (!c->rbuf) {
		close(fd);
		c->fd = -1;
		return rp_fail("out of memory");
	}
	/* FPDUs are whole messages: send each at once. */
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return set_nonblock(fd);
}

int rp_listen(uint16_t *port)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t len = sizeof(a);
	int fd, one = 1;

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return rp_fail("socket: %s", strerror(errno));
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 ||
	    listen(fd, 16) < 0 ||
	    getsockname(fd, (struct sockaddr *)&a, &len) < 0) {
		rp_fail("listen on 127.0.0.1: %s", strerror(errno));
		close(fd);
		return -1;
	}
	*port = ntohs(a.sin_port);
	return fd;
}

int rp_accept(struct rp_conn *c, int lfd)
{
	struct pollfd p = { .fd = lfd, .events = POLLIN };
	int r, fd;

	memset(c, 0, sizeof(*c));
	c->fd = -1;
	r = poll(&p, 1, rp_timeout_ms());
	if (r <= 0)
		return rp_fail("no connection to accept within %d ms",
			       rp_timeout_ms());
	fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	if (fd < 0)
		return rp_fail("accept: %s", strerror(errno));
	return conn_init(c, fd);
}

int rp_connect(struct rp_conn *c, uint16_t port, int rcvbuf)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	struct pollfd p;
	socklen_t len;
	int fd, e = 0;

	memset(c, 0, sizeof(*c));
	c->fd = -1;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	a.sin_port = htons(port);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return rp_fail("socket: %s", strerror(errno));
	if (rcvbuf > 0)
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf,
			   sizeof(rcvbuf));
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0 &&
	    errno != EINPROGRESS) {
		e = errno;
		close(fd);
		return rp_fail("connect to port %u: %s", port, strerror(e));
	}
	p.fd = fd;
	p.events = POLLOUT;
	if (poll(&p, 1, rp_timeout_ms()) <= 0) {
		close(fd);
		return rp_fail("connect to port %u: timed out", port);
	}
	len = sizeof(e);
	getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &len);
	if (e) {
		close(fd);
		return rp_fail("connect to port %u: %s", port, strerror(e));
	}
	return conn_init(c, fd);
}

static void sctp_end(struct rp_conn *c, bool abort);
static int sctp_session_terminate(struct rp_conn *c);

void rp_close(struct rp_conn *c)
{
	if (c->sctp) {
		sctp_end(c, false);
		return;
	}
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	free(c->rbuf);
	c->rbuf = NULL;
	c->rlen = c->rcap = 0;
}

void rp_abort(struct rp_conn *c)
{
	struct linger lg = { .l_onoff = 1, .l_linger = 0 };

	if (c->sctp) {
		sctp_end(c, true);
		return;
	}
	if (c->fd >= 0)
		setsockopt(c->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	rp_close(c);
}

int rp_shutdown_wr(struct rp_conn *c)
{
	if (c->sctp)
		return sctp_session_terminate(c);
	if (shutdown(c->fd, SHUT_WR) < 0)
		return rp_fail("shutdown: %s", strerror(errno));
	return 0;
}

int rp_set_rcvbuf(struct rp_conn *c, int bytes)
{
	if (c->sctp)
		return sp_set_rcvbuf(c->sp, bytes) < 0 ? -1 : 0;
	if (setsockopt(c->fd, SOL_SOCKET, SO_RCVBUF, &bytes,
		       sizeof(bytes)) < 0)
		return rp_fail("SO_RCVBUF: %s", strerror(errno));
	return 0;
}

/* Calls about MPA's byte stream have no meaning over SCTP. */
static int mpa_only(const struct rp_conn *c, const char *what)
{
	if (!c->sctp)
		return 0;
	return rp_fail("%s is about MPA over TCP; this connection is DDP "
		       "over SCTP", what);
}

int rp_write_raw(struct rp_conn *c, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	int64_t deadline = rp_now_ms() + rp_timeout_ms();

	if (mpa_only(c, "writing stream octets") < 0)
		return -1;

	while (len > 0) {
		ssize_t r = send(c->fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);

		if (r > 0) {
			p += r;
			len -= (size_t)r;
			continue;
		}
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			struct pollfd q = { .fd = c->fd, .events = POLLOUT };

			if (poll(&q, 1, left_ms(deadline)) <= 0)
				return rp_fail("send: blocked for %d ms with "
					       "%zu octets left",
					       rp_timeout_ms(), len);
			continue;
		}
		return rp_fail("send: %s", r < 0 ? strerror(errno) : "0");
	}
	return 0;
}

/* Receives whatever is there into rbuf (waiting until deadline for the
 * first octet).  1: octets came, 0: EOF, -1: error or time-out. */
static int rx_some(struct rp_conn *c, int64_t deadline)
{
	for (;;) {
		struct pollfd q = { .fd = c->fd, .events = POLLIN };
		ssize_t r;

		if (c->eof)
			return 0;
		if (c->rx_errno)
			return rp_fail("receive: %s", strerror(c->rx_errno));
		if (c->rcap - c->rlen < 4096) {
			uint8_t *nb = realloc(c->rbuf, c->rcap * 2);

			if (!nb)
				return rp_fail("out of memory");
			c->rbuf = nb;
			c->rcap *= 2;
		}
		r = recv(c->fd, c->rbuf + c->rlen, c->rcap - c->rlen,
			 MSG_DONTWAIT);
		if (r > 0) {
			c->rlen += (size_t)r;
			return 1;
		}
		if (r == 0) {
			c->eof = true;
			return 0;
		}
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN && errno != EWOULDBLOCK) {
			c->rx_errno = errno;
			return rp_fail("receive: %s", strerror(errno));
		}
		if (poll(&q, 1, left_ms(deadline)) <= 0)
			return rp_fail("nothing received within %d ms",
				       rp_timeout_ms());
	}
}

/* Makes at least need octets available in rbuf. */
static int fill(struct rp_conn *c, size_t need, int64_t deadline)
{
	while (c->rlen < need) {
		int r = rx_some(c, deadline);

		if (r < 0)
			return -1;
		if (r == 0)
			return rp_fail("connection closed by the other end "
				       "(%zu of %zu octets there)", c->rlen,
				       need);
	}
	return 0;
}

static void take(struct rp_conn *c, size_t n)
{
	memmove(c->rbuf, c->rbuf + n, c->rlen - n);
	c->rlen -= n;
}

int rp_read_raw(struct rp_conn *c, void *buf, size_t len)
{
	if (mpa_only(c, "reading stream octets") < 0)
		return -1;
	if (fill(c, len, rp_now_ms() + rp_timeout_ms()) < 0)
		return -1;
	memcpy(buf, c->rbuf, len);
	take(c, len);
	return 0;
}

static int sctp_wait_closed(struct rp_conn *c, size_t *extra);
static int sctp_quiet_for(struct rp_conn *c, int ms);

int rp_wait_closed(struct rp_conn *c, size_t *extra)
{
	int64_t deadline = rp_now_ms() + rp_timeout_ms();
	size_t n = 0;

	if (c->sctp)
		return sctp_wait_closed(c, extra);
	c->ndropped = 0;
	for (;;) {
		int r;

		if (c->rlen && c->ndropped < sizeof(c->dropped)) {
			size_t k = sizeof(c->dropped) - c->ndropped;

			if (k > c->rlen)
				k = c->rlen;
			memcpy(c->dropped + c->ndropped, c->rbuf, k);
			c->ndropped += k;
		}
		n += c->rlen;
		c->rlen = 0;
		if (c->eof)
			break;
		if (c->rx_errno == ECONNRESET)
			break;
		r = rx_some(c, deadline);
		if (r < 0 && c->rx_errno != ECONNRESET)
			return rp_fail("waiting for the other end to close: "
				       "%s", rp_err());
	}
	if (extra)
		*extra = n;
	return c->eof ? RP_CLOSED_FIN : RP_CLOSED_RESET;
}

int rp_quiet_for(struct rp_conn *c, int ms)
{
	struct pollfd q = { .fd = c->fd, .events = POLLIN };
	int r;

	if (c->sctp)
		return sctp_quiet_for(c, ms);
	if (c->rlen || c->eof || c->rx_errno)
		return 0;
	r = poll(&q, 1, ms);
	if (r < 0)
		return rp_fail("poll: %s", strerror(errno));
	return r == 0 ? 1 : 0;
}

/* ---- MPA startup ------------------------------------------------------- */

int rp_mpa_send_frame_raw(struct rp_conn *c, const uint8_t key[16],
			  uint8_t flags, uint8_t rev, uint16_t pd_len,
			  const void *pd, size_t pd_send)
{
	uint8_t *b = malloc(UIW_MPA_HDR_LEN + pd_send);
	int r;

	if (!b)
		return rp_fail("out of memory");
	memcpy(b, key, UIW_MPA_KEY_LEN);
	b[16] = flags;
	b[17] = rev;
	b[18] = (uint8_t)(pd_len >> 8);
	b[19] = (uint8_t)pd_len;
	if (pd_send)
		memcpy(b + UIW_MPA_HDR_LEN, pd, pd_send);
	r = rp_write_raw(c, b, UIW_MPA_HDR_LEN + pd_send);
	free(b);
	return r;
}

int rp_mpa_send_frame(struct rp_conn *c, bool reply, uint8_t flags,
		      uint8_t rev, const void *pd, uint16_t pd_len)
{
	uint8_t b[UIW_MPA_FRAME_MAX];
	struct uiw_mpa_frame f = {
		.reply = reply, .flags = flags, .rev = rev,
		.pd_len = pd_len, .pd = pd,
	};
	size_t n = uiw_mpa_frame_encode(b, sizeof(b), &f);

	if (!n)
		return rp_fail("cannot encode an MPA frame with %u octets "
			       "of private data", pd_len);
	return rp_write_raw(c, b, n);
}

int rp_mpa_read_frame(struct rp_conn *c, bool reply)
{
	int64_t deadline = rp_now_ms() + rp_timeout_ms();
	struct uiw_mpa_frame f;
	size_t used = 0;
	uiw_err_t e;
	char hx[200];

	if (mpa_only(c, "an MPA startup frame") < 0)
		return -1;
	if (fill(c, UIW_MPA_HDR_LEN, deadline) < 0)
		return rp_fail("reading the MPA %s: %s",
			       reply ? "Reply" : "Request", rp_err());
	e = uiw_mpa_frame_decode(c->rbuf, UIW_MPA_HDR_LEN, reply, &f, &used);
	if (e != UIW_OK)
		return rp_fail("bad MPA %s header: %s",
			       reply ? "Reply" : "Request",
			       rp_hex(c->rbuf, UIW_MPA_HDR_LEN, hx,
				      sizeof(hx)));
	if (fill(c, UIW_MPA_HDR_LEN + f.pd_len, deadline) < 0)
		return rp_fail("reading %u octets of private data: %s",
			       f.pd_len, rp_err());
	e = uiw_mpa_frame_decode(c->rbuf, UIW_MPA_HDR_LEN + f.pd_len, reply,
				 &f, &used);
	if (e != UIW_OK || used != UIW_MPA_HDR_LEN + (size_t)f.pd_len)
		return rp_fail("bad MPA frame");
	c->have_peer = true;
	c->peer_flags = f.flags;
	c->peer_rev = f.rev;
	c->peer_pd_len = f.pd_len;
	if (f.pd_len)
		memcpy(c->peer_pd, f.pd, f.pd_len);
	take(c, used);
	return 0;
}

void rp_full_operation(struct rp_conn *c, uint8_t our_flags)
{
	/* RFC 5044 §7.1.1: C in either frame: CRCs both ways; markers are
	 * added by the side whose peer set M. */
	c->crc = ((our_flags | c->peer_flags) & UIW_MPA_F_C) != 0;
	c->markers_tx = (c->peer_flags & UIW_MPA_F_M) != 0;
	c->markers_rx = (our_flags & UIW_MPA_F_M) != 0;
	c->tx_pos = c->rx_pos = 0;
	c->full = true;
}

int rp_mpa_initiate(struct rp_conn *c, uint8_t flags, const void *pd,
		    uint16_t pd_len)
{
	if (rp_mpa_send_frame(c, false, flags, 1, pd, pd_len) < 0 ||
	    rp_mpa_read_frame(c, true) < 0)
		return -1;
	if (c->peer_flags & UIW_MPA_F_R)
		return rp_fail("the MPA Reply rejected the connection");
	if (c->peer_rev != 1)
		return rp_fail("MPA Reply of revision %u", c->peer_rev);
	rp_full_operation(c, flags);
	return 0;
}

int rp_mpa_respond(struct rp_conn *c, uint8_t flags, const void *pd,
		   uint16_t pd_len)
{
	if (rp_mpa_read_frame(c, false) < 0)
		return -1;
	if (c->peer_rev != 1)
		return rp_fail("MPA Request of revision %u", c->peer_rev);
	if (rp_mpa_send_frame(c, true, flags, 1, pd, pd_len) < 0)
		return -1;
	rp_full_operation(c, flags);
	return 0;
}

/* ---- FPDUs ------------------------------------------------------------- */

size_t rp_fpdu_build(const struct rp_conn *c, uint8_t *out, size_t cap,
		     const void *ulpdu, size_t len)
{
	if (len > RP_ULPDU_MAX)
		return 0;
	return uiw_mpa_fpdu_encode(out, cap, c->tx_pos, ulpdu,
				   (uint16_t)len, c->markers_tx, c->crc);
}

void rp_fpdu_fix_crc(uint8_t *fpdu, size_t flen)
{
	uiw_crc32c_put(fpdu + flen - UIW_MPA_CRC_LEN,
		       uiw_crc32c(fpdu, flen - UIW_MPA_CRC_LEN));
}

size_t rp_fpdu_build_len(const struct rp_conn *c, uint8_t *out, size_t cap,
			 const void *ulpdu, size_t len, uint16_t claimed_len)
{
	size_t n = rp_fpdu_build(c, out, cap, ulpdu, len), at = 0;

	if (!n)
		return 0;
	if (c->markers_tx && c->tx_pos % UIW_MPA_MARKER_INTERVAL == 0)
		at = UIW_MPA_MARKER_LEN;
	out[at] = (uint8_t)(claimed_len >> 8);
	out[at + 1] = (uint8_t)claimed_len;
	if (c->crc)
		rp_fpdu_fix_crc(out, n);
	return n;
}

long rp_fpdu_marker_off(uint64_t pos, size_t ulpdu_len, bool markers,
			unsigned i)
{
	static _Thread_local struct uiw_mpa_piece
		p[UIW_MPA_MAX_PIECES(0xffffu)];
	uint32_t flen;
	unsigned n, k, seen = 0;
	long at = 0;

	n = uiw_mpa_layout(pos, (uint32_t)ulpdu_len, markers, p,
			   UIW_MPA_MAX_PIECES(0xffffu), &flen);
	for (k = 0; k < n; at += p[k].len, k++)
		if (p[k].kind == UIW_MPA_P_MARKER && seen++ == i)
			return at;
	return -1;
}

int rp_send_stream(struct rp_conn *c, const void *buf, size_t len)
{
	if (mpa_only(c, "writing stream octets") < 0)
		return -1;
	if (rp_write_raw(c, buf, len) < 0)
		return -1;
	c->tx_pos += len;
	return 0;
}

#define FPDU_BUF_MAX (RP_ULPDU_MAX + 16 + 4 * (RP_ULPDU_MAX / 508 + 4))

int rp_send_fpdu(struct rp_conn *c, const void *ulpdu, size_t len)
{
	uint8_t *b;
	size_t n;
	int r;

	if (c->sctp)
		return rp_sctp_send(c, SP_PPID_DDP, ulpdu, len);
	b = malloc(FPDU_BUF_MAX);
	if (!b)
		return rp_fail("out of memory");
	n = rp_fpdu_build(c, b, FPDU_BUF_MAX, ulpdu, len);
	if (!n) {
		free(b);
		return rp_fail("cannot frame a ULPDU of %zu octets", len);
	}
	r = rp_send_stream(c, b, n);
	free(b);
	return r;
}

int rp_send_fpdus(struct rp_conn *c, const struct iovec *ulpdu, int n)
{
	uint8_t *b;
	size_t at = 0, len;
	uint64_t pos = c->tx_pos;
	int i, r;

	if (c->sctp) {
		for (i = 0; i < n; i++)
			if (rp_sctp_send(c, SP_PPID_DDP, ulpdu[i].iov_base,
					 ulpdu[i].iov_len) < 0)
				return -1;
		return 0;
	}
	b = malloc((size_t)n * FPDU_BUF_MAX);
	if (!b)
		return rp_fail("out of memory");
	for (i = 0; i < n; i++) {
		len = rp_fpdu_build(c, b + at, (size_t)n * FPDU_BUF_MAX - at,
				    ulpdu[i].iov_base, ulpdu[i].iov_len);
		if (!len) {
			c->tx_pos = pos;
			free(b);
			return rp_fail("cannot frame a ULPDU of %zu octets",
				       ulpdu[i].iov_len);
		}
		at += len;
		c->tx_pos += len;       /* the next one's position */
	}
	c->tx_pos = pos;
	r = rp_send_stream(c, b, at);
	free(b);
	return r;
}

/* What a sender MUST put in the octets a receiver ignores (RFC 5044
 * §4.1: pad zero; §4.2: a marker's reserved half zero and the two low
 * FPDUPTR bits zero).  The FPDU of ulpdu_len octets is at rbuf[0]. */
static int check_sender_rules(const struct rp_conn *c, uint16_t ulpdu_len)
{
	static _Thread_local struct uiw_mpa_piece
		p[UIW_MPA_MAX_PIECES(0xffffu)];
	uint32_t flen;
	unsigned n, k, i;
	size_t at = 0;
	char hx[64];

	n = uiw_mpa_layout(c->rx_pos, ulpdu_len, c->markers_rx, p,
			   UIW_MPA_MAX_PIECES(0xffffu), &flen);
	for (k = 0; k < n; at += p[k].len, k++) {
		const uint8_t *b = c->rbuf + at;

		if (p[k].kind == UIW_MPA_P_MARKER &&
		    (b[0] || b[1] || (b[3] & 3)))
			return rp_fail("marker at stream octet %llu with "
				       "reserved bits set: %s",
				       (unsigned long long)(c->rx_pos + at),
				       rp_hex(b, 4, hx, sizeof(hx)));
		if (p[k].kind == UIW_MPA_P_PAD)
			for (i = 0; i < p[k].len; i++)
				if (b[i])
					return rp_fail("FPDU at stream octet "
						       "%llu has pad octets "
						       "that are not zero",
						       (unsigned long long)
						       c->rx_pos);
	}
	return 0;
}

static int sctp_recv_seg(struct rp_conn *c, uint8_t *ulpdu, size_t cap,
			 size_t *len);

int rp_recv_fpdu(struct rp_conn *c, uint8_t *ulpdu, size_t cap, size_t *len)
{
	int64_t deadline = rp_now_ms() + rp_timeout_ms();

	if (c->sctp)
		return sctp_recv_seg(c, ulpdu, cap, len);
	for (;;) {
		uint16_t ul = 0;
		size_t used = 0;
		uiw_err_t e = uiw_mpa_fpdu_decode(c->rbuf, c->rlen, c->rx_pos,
						  c->markers_rx, c->crc, ulpdu,
						  cap, &ul, &used);
		char hx[200];

		if (e != UIW_OK)
			return rp_fail("received FPDU at stream octet %llu is "
				       "bad (%s): %s",
				       (unsigned long long)c->rx_pos,
				       uiw_err_str(e),
				       rp_hex(c->rbuf, c->rlen, hx,
					      sizeof(hx)));
		if (used) {
			if (check_sender_rules(c, ul) < 0)
				return -1;
			take(c, used);
			c->rx_pos += used;
			*len = ul;
			return 0;
		}
		if (fill(c, c->rlen + 1, deadline) < 0)
			return rp_fail("waiting for an FPDU at stream octet "
				       "%llu: %s",
				       (unsigned long long)c->rx_pos,
				       rp_err());
	}
}

/* ---- DDP and RDMAP ----------------------------------------------------- */

size_t rp_hdr_tagged(uint8_t *buf, uint8_t opcode, bool last,
		     uint32_t stag, uint64_t to)
{
	struct uiw_ddp_hdr h = {
		.tagged = true, .last = last,
		.ddp_ver = UIW_DDP_VERSION, .rdmap_ver = UIW_RDMAP_VERSION,
		.opcode = opcode, .stag = stag, .to = to,
	};

	return uiw_ddp_hdr_encode(buf, &h);
}

size_t rp_hdr_untagged(uint8_t *buf, uint8_t opcode, bool last,
		       uint32_t qn, uint32_t msn, uint32_t mo, uint32_t inv)
{
	struct uiw_ddp_hdr h = {
		.tagged = false, .last = last,
		.ddp_ver = UIW_DDP_VERSION, .rdmap_ver = UIW_RDMAP_VERSION,
		.opcode = opcode, .rsvd_ulp = inv, .qn = qn, .msn = msn,
		.mo = mo,
	};

	return uiw_ddp_hdr_encode(buf, &h);
}

static int send_seg(struct rp_conn *c, const uint8_t *hdr, size_t hl,
		    const void *payload, size_t len)
{
	uint8_t *u;
	int r;

	if (hl + len > RP_ULPDU_MAX)
		return rp_fail("segment of %zu octets", hl + len);
	u = malloc(hl + len + 1);
	if (!u)
		return rp_fail("out of memory");
	memcpy(u, hdr, hl);
	if (len)
		memcpy(u + hl, payload, len);
	r = rp_send_fpdu(c, u, hl + len);
	free(u);
	return r;
}

int rp_send_send(struct rp_conn *c, uint8_t opcode, uint32_t inv,
		 const void *payload, size_t len)
{
	uint8_t h[UIW_DDP_MAX_HDR_LEN];
	size_t hl = rp_hdr_untagged(h, opcode, true, UIW_QN_SEND,
				    c->msn[0]++, 0, inv);

	return send_seg(c, h, hl, payload, len);
}

int rp_send_write(struct rp_conn *c, uint32_t stag, uint64_t to,
		  const void *payload, size_t len)
{
	uint8_t h[UIW_DDP_MAX_HDR_LEN];
	size_t hl = rp_hdr_tagged(h, UIW_OP_WRITE, true, stag, to);

	return send_seg(c, h, hl, payload, len);
}

int rp_send_read_req(struct rp_conn *c, const struct uiw_read_req *rr)
{
	uint8_t h[UIW_DDP_MAX_HDR_LEN], body[UIW_READ_REQ_LEN];
	size_t hl = rp_hdr_untagged(h, UIW_OP_READ_REQ, true,
				    UIW_QN_READ_REQ, c->msn[1]++, 0, 0);

	uiw_read_req_encode(body, rr);
	return send_seg(c, h, hl, body, sizeof(body));
}

int rp_send_read_resp(struct rp_conn *c, uint32_t stag, uint64_t to,
		      bool last, const void *payload, size_t len)
{
	uint8_t h[UIW_DDP_MAX_HDR_LEN];
	size_t hl = rp_hdr_tagged(h, UIW_OP_READ_RESP, last, stag, to);

	return send_seg(c, h, hl, payload, len);
}

int rp_recv_seg(struct rp_conn *c, struct rp_seg *s)
{
	uiw_err_t e;
	char hx[200];

	if (rp_recv_fpdu(c, s->ulpdu, sizeof(s->ulpdu), &s->len) < 0)
		return -1;
	e = uiw_ddp_hdr_decode(s->ulpdu, s->len, &s->h, &s->hlen);
	if (e != UIW_OK || s->hlen == 0)
		return rp_fail("received a ULPDU of %zu octets with a bad DDP "
			       "header (%s): %s", s->len, uiw_err_str(e),
			       rp_hex(s->ulpdu, s->len, hx, sizeof(hx)));
	s->pl = s->ulpdu + s->hlen;
	s->plen = s->len - s->hlen;
	return 0;
}

int rp_recv_term(struct rp_conn *c, struct rp_seg *s, struct uiw_term *t)
{
	const struct uiw_ddp_hdr *h = &s->h;
	uiw_err_t e;
	char hx[200];

	if (rp_recv_seg(c, s) < 0)
		return rp_fail("expected a Terminate: %s", rp_err());
	/* RFC 5040 §4.8, §5.4, Figure 4 */
	if (h->tagged || h->opcode != UIW_OP_TERMINATE ||
	    h->qn != UIW_QN_TERMINATE || !h->last || h->mo != 0)
		return rp_fail("expected a Terminate (untagged, QN 2, L, MO 0,"
			       " opcode 7), got %s opcode %u QN %u MSN %u MO "
			       "%u%s: %s", h->tagged ? "tagged" : "untagged",
			       h->opcode, h->qn, h->msn, h->mo,
			       h->last ? " L" : "",
			       rp_hex(s->ulpdu, s->len, hx, sizeof(hx)));
	/* The first (and only) message on queue 2: MSN 1; the Invalidate
	 * STag field is zero for a Terminate (RFC 5040 §4.1). */
	if (h->msn != 1 || h->rsvd_ulp != 0)
		return rp_fail("Terminate with MSN %u, Invalidate STag field "
			       "0x%08x", h->msn, h->rsvd_ulp);
	if (s->plen < 4)
		return rp_fail("Terminate payload of %zu octets", s->plen);
	/* RFC 5040 §4.8: the 13 reserved bits are zero on transmit. */
	if ((s->pl[2] & 0x1f) || s->pl[3])
		return rp_fail("Terminate header reserved bits set: %s",
			       rp_hex(s->pl, 4, hx, sizeof(hx)));
	memset(t, 0, sizeof(*t));
	e = uiw_term_decode(s->pl, s->plen, t);
	if (e != UIW_OK)
		return rp_fail("Terminate payload does not decode (%s): %s",
			       uiw_err_str(e),
			       rp_hex(s->pl, s->plen, hx, sizeof(hx)));
	if (t->siw_layout)
		return rp_fail("Terminate control field is not in the RFC "
			       "layout: %s", rp_hex(s->pl, 4, hx, sizeof(hx)));
	return 0;
}

/* ---- DDP over SCTP (RFC 5043) ------------------------------------------ */

void rp_sctp_init(struct rp_conn *c, int sp, uint16_t sid)
{
	memset(c, 0, sizeof(*c));
	c->fd = -1;
	c->msn[0] = c->msn[1] = c->msn[2] = c->msn[3] = 1;
	c->sctp = true;
	c->sp = sp;
	c->sid = sid;
	/* Not a byte stream: DDP over SCTP has no MPA startup (Full
	 * Operation from the first chunk, no CRC, no markers). */
	c->full = true;
}

void rp_chunk_free(struct rp_chunk *ch)
{
	free(ch->buf);
	ch->buf = NULL;
}

static void held_free(struct rp_conn *c)
{
	unsigned i;

	for (i = 0; i < RP_HELD_MAX; i++) {
		free(c->held[i].buf);
		c->held[i].buf = NULL;
	}
}

int rp_sctp_send_raw(struct rp_conn *c, uint16_t sid, uint32_t ppid,
		     bool unordered, const void *buf, size_t len)
{
	return sp_send(c->sp, sid, ppid, unordered, buf, len) < 0 ? -1 : 0;
}

int rp_sctp_send(struct rp_conn *c, uint32_t ppid, const void *buf,
		 size_t len)
{
	uint8_t *b = malloc(len + UIW_DDPS_SSN_LEN);
	int r;

	if (!b)
		return rp_fail("out of memory");
	/* RFC 5043 §5.2.1: the DDP-SSN, the stream's submission order;
	 * §10: unordered. */
	uiw_ddps_put_ssn(b, c->tx_ssn);
	if (len)
		memcpy(b + UIW_DDPS_SSN_LEN, buf, len);
	r = rp_sctp_send_raw(c, c->sid, ppid, true, b,
			     len + UIW_DDPS_SSN_LEN);
	free(b);
	if (r < 0)
		return -1;
	c->tx_ssn++;
	return 0;
}

/* A chunk of the stream: in its DDP-SSN's place. */
static int sctp_hold(struct rp_conn *c, struct sp_msg *m)
{
	uint16_t ssn, ahead;
	struct rp_held *h;
	char hx[64];

	if (m->len < UIW_DDPS_SSN_LEN) {
		rp_fail("a chunk of %zu octets on stream %u (PPID %u): "
			"shorter than its DDP-SSN", m->len, m->sid, m->ppid);
		sp_msg_free(m);
		return -1;
	}
	/* RFC 5043 §10: the U flag on every chunk. */
	if (!(m->flags & SP_F_UNORDERED)) {
		rp_fail("a chunk on stream %u (PPID %u, DDP-SSN %u) without "
			"the U flag (RFC 5043 §10)", m->sid, m->ppid,
			uiw_ddps_ssn(m->data));
		sp_msg_free(m);
		return -1;
	}
	ssn = uiw_ddps_ssn(m->data);
	ahead = (uint16_t)(ssn - c->rx_ssn);
	if (ahead >= RP_HELD_MAX) {
		rp_fail("a chunk with DDP-SSN %u on stream %u when %u is next "
			"(RFC 5043 §6: no gap, no DDP-SSN twice): %s", ssn,
			m->sid, c->rx_ssn,
			rp_hex(m->data, m->len, hx, sizeof(hx)));
		sp_msg_free(m);
		return -1;
	}
	h = &c->held[ssn % RP_HELD_MAX];
	if (h->buf) {
		rp_fail("DDP-SSN %u twice on stream %u", ssn, m->sid);
		sp_msg_free(m);
		return -1;
	}
	h->buf = m->data;
	h->len = m->len;
	h->ppid = m->ppid;
	h->flags = m->flags;
	m->data = NULL;
	return 0;
}

int rp_sctp_next(struct rp_conn *c, struct rp_chunk *ch, int timeout_ms)
{
	int64_t deadline = rp_now_ms() +
			   (timeout_ms > 0 ? timeout_ms : rp_timeout_ms());

	memset(ch, 0, sizeof(*ch));
	for (;;) {
		struct rp_held *h = &c->held[c->rx_ssn % RP_HELD_MAX];
		struct sp_msg m;
		int64_t left;
		int rc;

		if (h->buf) {
			ch->buf = h->buf;
			ch->len = h->len;
			ch->ppid = h->ppid;
			ch->flags = h->flags;
			ch->ssn = c->rx_ssn++;
			h->buf = NULL;
			return 0;
		}
		if (c->down)
			return rp_fail("the association is over (stream %u, "
				       "DDP-SSN %u next)", c->sid, c->rx_ssn);
		left = deadline - rp_now_ms();
		if (left <= 0)
			return rp_fail("no chunk with DDP-SSN %u on stream %u "
				       "within %d ms", c->rx_ssn, c->sid,
				       timeout_ms > 0 ? timeout_ms :
				       rp_timeout_ms());
		rc = sp_recv(c->sp, c->sid, &m, (int)left);
		if (rc == -ECONNRESET || rc == -ENOTCONN) {
			c->down = true;
			c->eof = rc == -ENOTCONN;
			c->rx_errno = rc == -ECONNRESET ? ECONNRESET : 0;
			continue;
		}
		if (rc < 0)
			return rp_fail("waiting for DDP-SSN %u on stream %u: %s",
				       c->rx_ssn, c->sid, rp_err());
		if (sctp_hold(c, &m) < 0)
			return -1;
	}
}

static const char *ctl_name(const uint8_t *buf, size_t len)
{
	return len >= UIW_DDPS_CTL_HDR ?
	       uiw_ddps_fc_name(uiw_ddps_ssn(buf + UIW_DDPS_SSN_LEN)) :
	       "control message too short";
}

/* A DDP segment: the next chunk, which must be a DDP Segment Chunk. */
static int sctp_recv_seg(struct rp_conn *c, uint8_t *ulpdu, size_t cap,
			 size_t *len)
{
	struct rp_chunk ch;
	char hx[200];

	if (rp_sctp_next(c, &ch, 0) < 0)
		return rp_fail("waiting for a DDP Segment Chunk: %s",
			       rp_err());
	if (ch.ppid != SP_PPID_DDP) {
		if (ch.ppid == SP_PPID_CTL && ch.len == UIW_DDPS_CTL_HDR &&
		    uiw_ddps_ssn(ch.buf + 2) == UIW_DDPS_TERMINATE)
			c->sess_term_rcvd = true;
		rp_fail("a chunk with PPID %u (%s, DDP-SSN %u) where a DDP "
			"Segment Chunk was expected: %s", ch.ppid,
			ch.ppid == SP_PPID_CTL ? ctl_name(ch.buf, ch.len) :
			"not DDP's", ch.ssn,
			rp_hex(ch.buf, ch.len, hx, sizeof(hx)));
		rp_chunk_free(&ch);
		return -1;
	}
	*len = ch.len - UIW_DDPS_SSN_LEN;
	if (*len > cap) {
		rp_chunk_free(&ch);
		return rp_fail("a DDP segment of %zu octets", *len);
	}
	memcpy(ulpdu, ch.buf + UIW_DDPS_SSN_LEN, *len);
	rp_chunk_free(&ch);
	return 0;
}

int rp_ddps_send_ctl(struct rp_conn *c, uint16_t fc,
		     const struct uiw_mpa_v2 *v2, const void *pd,
		     uint16_t pd_len)
{
	uint8_t b[UIW_DDPS_CTL_MAX];
	struct uiw_mpa_v2 zero = { 0 };
	int n = uiw_ddps_ctl_encode(b, c->tx_ssn, fc, v2 ? v2 : &zero, pd,
				    pd_len);

	if (n < 0)
		return rp_fail("cannot encode a %s with %u octets of private "
			       "data (%d)", uiw_ddps_fc_name(fc), pd_len, n);
	/* The encoder wrote the DDP-SSN; rp_sctp_send writes it again. */
	if (rp_sctp_send(c, SP_PPID_CTL, b + UIW_DDPS_SSN_LEN,
			 (size_t)n - UIW_DDPS_SSN_LEN) < 0)
		return -1;
	if (fc == UIW_DDPS_TERMINATE)
		c->sess_term_sent = true;
	return 0;
}

static int ctl_take(struct rp_conn *c, struct rp_chunk *ch)
{
	const char *why = NULL;
	char hx[200];

	if (ch->ppid != SP_PPID_CTL) {
		rp_fail("a chunk with PPID %u (DDP-SSN %u) where a session "
			"control message was expected: %s", ch->ppid, ch->ssn,
			rp_hex(ch->buf, ch->len, hx, sizeof(hx)));
		rp_chunk_free(ch);
		return -1;
	}
	if (uiw_ddps_ctl_decode(ch->buf, ch->len, &c->ctl, &why) < 0) {
		rp_fail("a session control message that does not decode "
			"(%s): %s", why ? why : "?",
			rp_hex(ch->buf, ch->len, hx, sizeof(hx)));
		rp_chunk_free(ch);
		return -1;
	}
	if (c->ctl.pd_len)
		memcpy(c->ctl_pd, c->ctl.pd, c->ctl.pd_len);
	c->ctl.pd = c->ctl_pd;
	if (c->ctl.fc == UIW_DDPS_TERMINATE)
		c->sess_term_rcvd = true;
	rp_chunk_free(ch);
	return c->ctl.fc;
}

int rp_ddps_recv_ctl(struct rp_conn *c)
{
	struct rp_chunk ch;

	if (rp_sctp_next(c, &ch, 0) < 0)
		return rp_fail("waiting for a session control message: %s",
			       rp_err());
	return ctl_take(c, &ch);
}

int rp_ddps_initiate(struct rp_conn *c, const struct uiw_mpa_v2 *v2,
		     const void *pd, uint16_t pd_len)
{
	uint16_t want = v2 ? UIW_DDPS_E_ACCEPT : UIW_DDPS_ACCEPT;
	int fc;

	if (rp_ddps_send_ctl(c, v2 ? UIW_DDPS_E_INITIATE : UIW_DDPS_INITIATE,
			     v2, pd, pd_len) < 0)
		return -1;
	fc = rp_ddps_recv_ctl(c);
	if (fc < 0)
		return -1;
	if (fc != want)
		return rp_fail("the answer to our %sInitiate is a %s, not "
			       "an %s", v2 ? "Enhanced " : "",
			       uiw_ddps_fc_name((uint16_t)fc),
			       uiw_ddps_fc_name(want));
	return 0;
}

int rp_ddps_await(struct rp_conn *c, int timeout_ms)
{
	struct rp_chunk ch = { 0 };
	struct sp_msg m;
	int fc;

	/* The stream is the one the Initiate comes on (RFC 5043 §6.2),
	 * its DDP-SSNs from 0 both ways (§6.1). */
	if (sp_recv(c->sp, -1, &m, timeout_ms) < 0)
		return rp_fail("waiting for an Initiate: %s", rp_err());
	c->sid = m.sid;
	c->rx_ssn = 0;
	c->tx_ssn = 0;
	if (sctp_hold(c, &m) < 0 || rp_sctp_next(c, &ch, 0) < 0)
		return -1;
	fc = ctl_take(c, &ch);
	if (fc < 0)
		return -1;
	if (fc != UIW_DDPS_INITIATE && fc != UIW_DDPS_E_INITIATE)
		return rp_fail("the first control message on stream %u is a "
			       "%s, not an Initiate", c->sid,
			       uiw_ddps_fc_name((uint16_t)fc));
	return fc;
}

int rp_ddps_respond(struct rp_conn *c, const struct uiw_mpa_v2 *v2,
		    const void *pd, uint16_t pd_len)
{
	int fc = rp_ddps_await(c, 0);

	if (fc < 0)
		return -1;
	return rp_ddps_send_ctl(c, fc == UIW_DDPS_E_INITIATE ?
				UIW_DDPS_E_ACCEPT : UIW_DDPS_ACCEPT, v2, pd,
				pd_len);
}

static int sctp_session_terminate(struct rp_conn *c)
{
	if (c->sess_term_sent || c->down)
		return 0;
	return rp_ddps_send_ctl(c, UIW_DDPS_TERMINATE, NULL, NULL, 0);
}

static void sctp_end(struct rp_conn *c, bool abort)
{
	if (!c->sctp || c->sp < 0)
		return;
	if (abort) {
		sp_abort(c->sp);
	} else {
		/* RFC 5043 §6.2: our Session Terminate ends our side of the
		 * session; the association goes with it (a new case opens
		 * a new one). */
		sctp_session_terminate(c);
		sp_close(c->sp);
	}
	c->sp = -1;
	held_free(c);
}

/* The other end's Session Terminate, after any DDP segments (counted in
 * *extra), or the association's end. */
static int sctp_wait_closed(struct rp_conn *c, size_t *extra)
{
	struct rp_chunk ch;
	size_t n = 0;
	int fc;

	c->ndropped = 0;
	for (;;) {
		if (rp_sctp_next(c, &ch, 0) < 0) {
			if (c->down)
				break;
			return rp_fail("waiting for the other end's Session "
				       "Terminate: %s", rp_err());
		}
		if (ch.ppid == SP_PPID_CTL) {
			fc = ctl_take(c, &ch);
			if (fc < 0)
				return -1;
			if (fc != UIW_DDPS_TERMINATE)
				return rp_fail("a %s where the Session "
					       "Terminate was expected",
					       uiw_ddps_fc_name((uint16_t)fc));
			if (extra)
				*extra = n;
			return RP_CLOSED_FIN;
		}
		if (c->ndropped < sizeof(c->dropped)) {
			size_t k = sizeof(c->dropped) - c->ndropped;

			if (k > ch.len)
				k = ch.len;
			memcpy(c->dropped + c->ndropped, ch.buf, k);
			c->ndropped += k;
		}
		n += ch.len - UIW_DDPS_SSN_LEN;
		rp_chunk_free(&ch);
	}
	if (extra)
		*extra = n;
	return RP_CLOSED_RESET;
}

static int sctp_quiet_for(struct rp_conn *c, int ms)
{
	struct sp_msg m;
	int rc;

	if (c->held[c->rx_ssn % RP_HELD_MAX].buf || c->down ||
	    sp_pending(c->sp, c->sid))
		return 0;
	rc = sp_recv(c->sp, c->sid, &m, ms);
	if (rc == -ETIMEDOUT)
		return 1;
	if (rc == -ECONNRESET || rc == -ENOTCONN) {
		c->down = true;
		return 0;
	}
	if (rc < 0)
		return -1;
	return sctp_hold(c, &m) < 0 ? -1 : 0;
}
