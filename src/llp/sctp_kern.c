/*
 * The kernel's SCTP as a carrier of DDP (RFC 5043): see sctp.h.
 *
 * One one-to-one style socket (SOCK_STREAM, IPPROTO_SCTP) per listener
 * and per association, non-blocking, watched on the stack's progress
 * thread.  Every socket is set up for DDP before it connects or
 * listens (accepted sockets inherit the listener's options):
 *
 *   SCTP_ADAPTATION_LAYER 1   the DDP Adaptation Layer Indication in
 *                             INIT and INIT-ACK (RFC 5043 §5.1)
 *   SCTP_INITMSG              as many streams in as out (§8)
 *   SCTP_NODELAY              untagged messages not held for bundling
 *                             (§11.2)
 *   SCTP_RECVRCVINFO          stream and PPID of each message
 *   SCTP_FRAGMENT_INTERLEAVE 0  a message read in parts (partial
 *                             delivery) is never interleaved with
 *                             another, so its parts are joined here
 *                             into one buffer (at most RX_MAX octets:
 *                             no peer of ours sends more in one DATA
 *                             chunk, so more is an abort)
 *   SCTP_EVENT                ASSOC_CHANGE, ADAPTATION_INDICATION,
 *                             SHUTDOWN; SENDER_DRY only while a dry
 *                             upcall is wanted (the kernel queues one
 *                             each time a SACK empties the send queue)
 *
 * One local address (§7.2): a socket is bound to one address before it
 * connects (the one given, or the one the route to the peer takes), so
 * that INIT lists none (the kernel embeds no address when it has one
 * only), which is also what RFC 6951 §5.7 asks of encapsulated packets.
 * A listener is bound where the caller says: on a wildcard address the
 * kernel lists in INIT-ACK every local address in the peer's scope.
 *
 * UDP encapsulation (RFC 6951): the kernel encapsulates only when
 * net.sctp.udp_port is set (Linux 5.11 on).  That port is then its one
 * local encapsulation port (source of every encapsulated packet, and
 * where it receives them), taken by each socket when it is created;
 * cfg.udp_port cannot change it.  With it set, connecting sockets send
 * to the remote encapsulation port cfg.udp_port
 * (SCTP_REMOTE_UDP_ENCAPS_PORT), so that the kernel speaks to usrsctp
 * peers; accepted associations answer to the UDP source port of the
 * peer's INIT (§5.4).  With it zero (or absent), associations run over
 * plain SCTP/IP and info.peer_udp_port is 0.
 *
 * The kernel makes no callbacks: every upcall comes from this file's fd
 * callbacks and work items on the progress thread, with no recvmsg or
 * sendmsg under way.  An association is up at COMM_UP, after
 * the ADAPTATION_INDICATION of the same handshake when the peer sent
 * one (the kernel queues both together, COMM_UP first): up is given
 * when the next thing read is neither, or nothing is left to read.
 *
 * Why it went down, from the ASSOC_CHANGE event and the socket error the
 * kernel set with it (SO_ERROR): COMM_LOST is -ECONNRESET after the
 * peer's ABORT and -ETIMEDOUT when retransmissions gave up;
 * CANT_STR_ASSOC is -ECONNREFUSED (an ABORT answered the INIT) or
 * -ETIMEDOUT; SHUTDOWN_COMP is 0; our own ABORT (SO_LINGER 0, close) is
 * -ECONNABORTED, or -EPROTO when the peer sent what no DDP peer may (a
 * message over RX_MAX), given by a work item of the next round.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>
/* After the libc socket headers: it names their sockaddr_storage. */
#include <linux/sctp.h>

#include "../rt/log.h"
#include "../rt/rt.h"
#include "sctp_backend.h"

#define RX_MAX        (65536 + 4096)  /* one message, joined: 64 KiB and
					 slack for a peer's headers */
#define RX_COPY_MAX   2048            /* a message this small is copied
					 out; a larger one takes the
					 receive buffer itself */
#define RX_BUDGET     64              /* recvmsg calls per wake-up */
#define UDP_PORT_PATH "/proc/sys/net/sctp/udp_port"

struct kern_stack {
	struct uiw_sctp_stack_base base;
	/* Where every association reads (all on the one thread): an
	 * association takes it over only while a message of its own is
	 * read in parts, and the upcall takes it with a large message; a
	 * new one is made on the next read.  Idle associations hold none. */
	uint8_t *rxbuf;
	/* Every association and listener alive, so that destroy can let
	 * go of what its users left (sctp_backend.h). */
	struct kern_assoc *assocs;
	struct kern_lsn *lsns;
};

struct kern_assoc;

struct kern_lsn {
	struct uiw_sctp_lsn_base base;
	int fd;
	bool in_cb;                   /* lsn_cb runs: unlisten defers the
					 free to it */
	bool gone;                    /* unlisten was called */
	struct uiw_rt_watch *watch;
	const struct uiw_sctp_up *up;
	void *ctx;
	int backlog;
	bool udp;                     /* made with encapsulation on */
	struct sockaddr_storage addr;
	struct kern_assoc *pending;   /* accepted, up not yet given */
	struct kern_lsn *next, *prev; /* the stack's */
};

struct kern_assoc {
	struct uiw_sctp_assoc_base base;
	int fd;
	struct uiw_rt_watch *watch;
	struct kern_lsn *lsn;         /* accepted, up not yet given */
	struct kern_assoc *next_pending;
	bool udp;                     /* made with encapsulation on */

	bool comm_up;                 /* COMM_UP read */
	bool up_due;                  /* ... and up not yet given */
	bool up_given;
	bool going_down;              /* SHUTDOWN ours or the peer's: no
					 more sends */
	bool shut_sent;               /* ours asked of the kernel */
	bool shut_due;                /* shutdown asked before up */
	bool aborted;                 /* ours: the fd is closed, down
					 (kill_err) comes from the work */
	int kill_err;
	bool over;                    /* down given (or being given) */
	bool eof;                     /* the peer's SHUTDOWN read to its
					 end: watched edge-triggered */
	bool want_out;                /* a send said -EAGAIN */
	bool want_dry;
	bool dry_sub;                 /* SENDER_DRY subscribed */
	bool dry_due;                 /* the work item gives dry */

	/* One message being joined from its parts (rx: the stack's
	 * receive buffer, taken over meanwhile). */
	uint8_t *rx;
	size_t rx_len;
	uint16_t rx_sid;
	uint32_t rx_ppid;

	struct uiw_rt_work work;      /* dry, and down after our abort */
	struct kern_assoc *next, *prev;   /* the stack's */
};

#define SBASE(s)  ((struct uiw_sctp_stack_base *)(s))
#define KSTACK(s) ((struct kern_stack *)(s))
#define KASSOC(a) ((struct kern_assoc *)(a))
#define KLSN(l)   ((struct kern_lsn *)(l))

/* ---- Set-up ----------------------------------------------------------- */

/* net.sctp.udp_port: the kernel's local encapsulation port (0: none, or
 * a kernel without RFC 6951). */
static unsigned kern_udp_port(void)
{
	unsigned v = 0;
	FILE *f = fopen(UDP_PORT_PATH, "re");

	if (!f)
		return 0;
	if (fscanf(f, "%u", &v) != 1)
		v = 0;
	fclose(f);
	return v;
}

static int sopt(int fd, int name, const void *v, socklen_t len,
		const char *what)
{
	if (setsockopt(fd, IPPROTO_SCTP, name, v, len) == 0)
		return 0;
	return uiw_error(errno, "kernel SCTP: setsockopt %s: %s", what,
			 strerror(errno));
}

static int sopt_int(int fd, int name, int v, const char *what)
{
	return sopt(fd, name, &v, sizeof(v), what);
}

static int event_set(int fd, uint16_t type, bool on)
{
	struct sctp_event ev = {
		.se_assoc_id = SCTP_FUTURE_ASSOC,
		.se_type = type,
		.se_on = on,
	};

	if (setsockopt(fd, IPPROTO_SCTP, SCTP_EVENT, &ev, sizeof(ev)) == 0)
		return 0;
	if (errno == ENOPROTOOPT)
		return uiw_error(ENOPROTOOPT, "kernel SCTP: no SCTP_EVENT "
				 "socket option (Linux 5.0 on; RFC 6458 §6.2.2)");
	return uiw_error(errno, "kernel SCTP: setsockopt SCTP_EVENT: %s",
			 strerror(errno));
}

/* IP header the kernel counts in a path MTU, for cfg.mtu (which counts
 * from the SCTP common header on). */
static uint32_t net_header_len(int family)
{
	return family == AF_INET6 ? 40 : 20;
}

/* Everything a socket needs before it connects or listens (see the
 * head of this file).  connecting: the remote encapsulation port too. */
static int sock_setup(struct uiw_sctp_stack *s, int fd, int family,
		      bool udp, bool connecting)
{
	const struct uiw_sctp_config *cfg = &SBASE(s)->cfg;
	struct sctp_setadaptation ad = {
		.ssb_adaptation_ind = UIW_SCTP_ADAPT_DDP,
	};
	struct sctp_initmsg im = {
		.sinit_num_ostreams = cfg->streams,
		.sinit_max_instreams = cfg->streams,
	};
	static const uint16_t events[] = {
		SCTP_ASSOC_CHANGE, SCTP_ADAPTATION_INDICATION,
		SCTP_SHUTDOWN_EVENT,
	};
	size_t i;
	int ret;

	if ((ret = sopt(fd, SCTP_ADAPTATION_LAYER, &ad, sizeof(ad),
			"SCTP_ADAPTATION_LAYER")) ||
	    (ret = sopt(fd, SCTP_INITMSG, &im, sizeof(im), "SCTP_INITMSG")) ||
	    (ret = sopt_int(fd, SCTP_NODELAY, 1, "SCTP_NODELAY")) ||
	    (ret = sopt_int(fd, SCTP_RECVRCVINFO, 1, "SCTP_RECVRCVINFO")) ||
	    (ret = sopt_int(fd, SCTP_FRAGMENT_INTERLEAVE, 0,
			    "SCTP_FRAGMENT_INTERLEAVE")))
		return ret;
	for (i = 0; i < sizeof(events) / sizeof(events[0]); i++)
		if ((ret = event_set(fd, events[i], true)))
			return ret;
	if (cfg->mtu) {
		struct sctp_paddrparams pp;

		memset(&pp, 0, sizeof(pp));
		pp.spp_assoc_id = SCTP_FUTURE_ASSOC;
		pp.spp_flags = SPP_PMTUD_DISABLE;
		/* The kernel's path MTU counts the IP header, and the UDP
		 * header when the socket may encapsulate (RFC 6951 §5.6). */
		pp.spp_pathmtu = cfg->mtu + net_header_len(family) +
				 (udp ? 8 : 0);
		if ((ret = sopt(fd, SCTP_PEER_ADDR_PARAMS, &pp, sizeof(pp),
				"SCTP_PEER_ADDR_PARAMS (path MTU)")))
			return ret;
	}
	if (udp && connecting) {
		struct sctp_udpencaps ue;

		/* A wildcard address: the port applies to the paths the
		 * association will have (RFC 6951 §6.1). */
		memset(&ue, 0, sizeof(ue));
		ue.sue_assoc_id = SCTP_FUTURE_ASSOC;
		ue.sue_port = htons(cfg->udp_port);
		if ((ret = sopt(fd, SCTP_REMOTE_UDP_ENCAPS_PORT, &ue,
				sizeof(ue), "SCTP_REMOTE_UDP_ENCAPS_PORT")))
			return ret;
	}
	return 0;
}

/* A socket of family set up for DDP (sock_setup), or -errno. */
static int sock_make(struct uiw_sctp_stack *s, int family, bool udp,
		     bool connecting)
{
	int fd = socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
			IPPROTO_SCTP);
	int ret;

	if (fd < 0)
		return uiw_error(errno, "kernel SCTP: socket: %s",
				 strerror(errno));
	ret = sock_setup(s, fd, family, udp, connecting);
	if (ret) {
		close(fd);
		return ret;
	}
	return fd;
}

static socklen_t sa_len(int family)
{
	return family == AF_INET6 ? sizeof(struct sockaddr_in6)
				  : sizeof(struct sockaddr_in);
}

/* The one local address an association to peer uses when none is given:
 * the source address of the route to it (a UDP socket's connect does
 * the lookup and sends nothing), port 0. */
static int route_source(const struct sockaddr *peer, socklen_t peerlen,
			struct sockaddr_storage *ss)
{
	socklen_t len = sizeof(*ss);
	int fd = socket(peer->sa_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	int e;

	if (fd < 0)
		return -errno;
	if (connect(fd, peer, peerlen) < 0 ||
	    getsockname(fd, (struct sockaddr *)ss, &len) < 0) {
		e = errno;
		close(fd);
		return -e;
	}
	close(fd);
	if (ss->ss_family == AF_INET6)
		((struct sockaddr_in6 *)ss)->sin6_port = 0;
	else
		((struct sockaddr_in *)ss)->sin_port = 0;
	return 0;
}

/* ---- Associations ----------------------------------------------------- */

static void assoc_cb(void *arg, uint32_t events);
static void assoc_work(void *arg);

static struct kern_assoc *assoc_new(struct uiw_sctp_stack *s, int fd,
				    bool udp, bool active)
{
	struct kern_assoc *a = calloc(1, sizeof(*a));

	if (!a)
		return NULL;
	a->base.stack = s;
	a->base.info.active = active;
	a->fd = fd;
	a->udp = udp;
	uiw_rt_work_init(&a->work, assoc_work, a);
	a->watch = uiw_rt_watch_add(SBASE(s)->rt, fd, EPOLLIN, assoc_cb, a);
	if (!a->watch) {
		free(a);
		return NULL;
	}
	SBASE(s)->users++;
	a->next = KSTACK(s)->assocs;
	if (a->next)
		a->next->prev = a;
	KSTACK(s)->assocs = a;
	return a;
}

static void lsn_unpend(struct kern_assoc *a)
{
	struct kern_assoc **pp;

	if (!a->lsn)
		return;
	for (pp = &a->lsn->pending; *pp; pp = &(*pp)->next_pending)
		if (*pp == a) {
			*pp = a->next_pending;
			break;
		}
	a->lsn = NULL;
	a->next_pending = NULL;
}

/* Closes the socket; with abortive, the kernel sends an ABORT (RFC 4960
 * §9.1) instead of leaving a live association behind. */
static void assoc_close_fd(struct kern_assoc *a, bool abortive)
{
	if (a->watch) {
		uiw_rt_watch_del(a->watch);
		a->watch = NULL;
	}
	if (a->fd < 0)
		return;
	if (abortive) {
		struct linger lg = { .l_onoff = 1, .l_linger = 0 };

		setsockopt(a->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	}
	close(a->fd);
	a->fd = -1;
}

static void assoc_free(struct kern_assoc *a)
{
	struct uiw_sctp_stack *s = a->base.stack;

	uiw_rt_work_cancel(SBASE(s)->rt, &a->work);
	lsn_unpend(a);
	if (a->prev)
		a->prev->next = a->next;
	else
		KSTACK(s)->assocs = a->next;
	if (a->next)
		a->next->prev = a->prev;
	free(a->rx);
	free(a);
	SBASE(s)->users--;
}

static void give_up(struct kern_assoc *a);

/* Gives down (to whoever knows of a) and frees a.  An accepted
 * association whose up was never given goes without a word. */
static void assoc_down(struct kern_assoc *a, int err)
{
	bool known = !a->lsn;

	UIW_DBG(1, "kernel SCTP: association %p down (%d)", (void *)a, err);
	if (known && a->base.up && a->base.up->down)
		a->base.up->down(a->base.ctx, (struct uiw_sctp_assoc *)a, err);
	assoc_free(a);
}

/* The end, seen on the socket: the up that COMM_UP announced, if not
 * given yet, then down (messages read before it went first). */
static void assoc_finish(struct kern_assoc *a, int err, bool abortive)
{
	if (a->over)
		return;
	if (a->up_due)
		give_up(a);
	if (a->over)      /* the up upcall aborted it */
		return;
	a->over = true;
	assoc_close_fd(a, abortive);
	assoc_down(a, err);
}

static void assoc_work(void *arg)
{
	struct kern_assoc *a = arg;

	if (a->aborted) {
		assoc_down(a, a->kill_err);
		return;
	}
	if (a->dry_due && !a->over) {
		a->dry_due = false;
		if (a->want_dry) {
			a->want_dry = false;
			if (a->base.up->dry)
				a->base.up->dry(a->base.ctx,
						(struct uiw_sctp_assoc *)a);
		}
	}
}

/* ABORT now (SO_LINGER 0, close); down(err) from the next round:
 * -ECONNABORTED when the caller asked, -EPROTO when the peer broke a
 * bound of ours. */
static void assoc_kill(struct kern_assoc *a, int err)
{
	if (a->over)
		return;
	a->aborted = true;
	a->kill_err = err;
	a->over = true;          /* no upcall but the down to come */
	a->going_down = true;
	a->want_dry = false;
	assoc_close_fd(a, true);
	UIW_DBG(1, "kernel SCTP: association %p aborted (%d)", (void *)a,
		err);
	uiw_rt_post(SBASE(a->base.stack)->rt, &a->work);
}

static int status_get(struct kern_assoc *a, struct sctp_status *st)
{
	socklen_t len = sizeof(*st);

	memset(st, 0, sizeof(*st));
	st->sstat_assoc_id = SCTP_FUTURE_ASSOC;  /* one-to-one: ignored */
	if (getsockopt(a->fd, IPPROTO_SCTP, SCTP_STATUS, st, &len) < 0)
		return -errno;
	return 0;
}

/* What the association is, read once at COMM_UP. */
static void info_fill(struct kern_assoc *a)
{
	struct uiw_sctp_info *in = &a->base.info;
	struct sctp_assoc_value av = { .assoc_id = SCTP_FUTURE_ASSOC };
	struct sctp_status st;
	socklen_t len;

	len = sizeof(in->local);
	if (getsockname(a->fd, (struct sockaddr *)&in->local, &len) < 0)
		memset(&in->local, 0, sizeof(in->local));
	if (status_get(a, &st) == 0) {
		in->in_streams = st.sstat_instrms;
		in->out_streams = st.sstat_outstrms;
		memcpy(&in->peer, &st.sstat_primary.spinfo_address,
		       sizeof(in->peer));
	}
	in->streams = in->in_streams < in->out_streams ? in->in_streams
						       : in->out_streams;
	len = sizeof(av);
	if (getsockopt(a->fd, IPPROTO_SCTP, SCTP_MAXSEG, &av, &len) == 0)
		in->maxseg = av.assoc_value;
	in->peer_udp_port = 0;
	if (a->udp) {
		struct sctp_udpencaps ue;

		/* The path to the primary address: the UDP port its
		 * packets came from (RFC 6951 §5.4), or ours, or 0 if the
		 * peer spoke plain SCTP. */
		memset(&ue, 0, sizeof(ue));
		memcpy(&ue.sue_address, &in->peer, sizeof(in->peer));
		len = sizeof(ue);
		if (getsockopt(a->fd, IPPROTO_SCTP,
			       SCTP_REMOTE_UDP_ENCAPS_PORT, &ue, &len) == 0)
			in->peer_udp_port = ntohs(ue.sue_port);
	}
}

static void do_shutdown(struct kern_assoc *a)
{
	a->going_down = true;
	a->shut_sent = true;
	if (shutdown(a->fd, SHUT_WR) < 0)
		UIW_DBG(1, "kernel SCTP: shutdown: %s", strerror(errno));
}

/* Gives the up upcall that COMM_UP announced. */
static void give_up(struct kern_assoc *a)
{
	a->up_due = false;
	a->up_given = true;
	lsn_unpend(a);
	UIW_DBG(1, "kernel SCTP: association %p up: streams %u/%u, maxseg "
		"%u, adaptation %s %#x, UDP port %u", (void *)a,
		a->base.info.in_streams, a->base.info.out_streams,
		a->base.info.maxseg,
		a->base.info.peer_adapt_seen ? "seen" : "absent",
		a->base.info.peer_adapt, a->base.info.peer_udp_port);
	if (a->base.up && a->base.up->up)
		a->base.up->up(a->base.ctx, (struct uiw_sctp_assoc *)a,
			       &a->base.info);
	if (a->shut_due && !a->over && a->fd >= 0) {
		a->shut_due = false;
		do_shutdown(a);
	}
}

/* The socket error the kernel set with a failure event (read once). */
static int sock_err(int fd)
{
	int e = 0;
	socklen_t len = sizeof(e);

	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &len) < 0)
		return 0;
	return e;
}

static void dry_unsub(struct kern_assoc *a)
{
	if (a->dry_sub && a->fd >= 0) {
		event_set(a->fd, SCTP_SENDER_DRY_EVENT, false);
		a->dry_sub = false;
	}
}

/* A SENDER_DRY event says the send queue was empty when it was queued;
 * a dry upcall is given only if nothing sent since is unacknowledged. */
static void on_dry_event(struct kern_assoc *a)
{
	struct sctp_status st;

	if (!a->want_dry) {
		dry_unsub(a);
		return;
	}
	if (status_get(a, &st) < 0 || st.sstat_unackdata != 0)
		return;
	a->want_dry = false;
	dry_unsub(a);
	if (a->base.up->dry)
		a->base.up->dry(a->base.ctx, (struct uiw_sctp_assoc *)a);
}

/* One whole notification.  Returns false when the association ended. */
static bool on_notification(struct kern_assoc *a, const void *buf,
			    size_t len)
{
	union sctp_notification n;
	const union sctp_notification *sn = &n;
	int e;

	/* Aligned, and what it says of itself past its end reads as 0. */
	memset(&n, 0, sizeof(n));
	memcpy(&n, buf, len < sizeof(n) ? len : sizeof(n));
	if (len < sizeof(sn->sn_header))
		return true;
	if (a->up_due && sn->sn_header.sn_type != SCTP_ADAPTATION_INDICATION)
		give_up(a);
	if (a->over)
		return false;
	switch (sn->sn_header.sn_type) {
	case SCTP_ASSOC_CHANGE:
		if (len < sizeof(sn->sn_assoc_change))
			return true;
		switch (sn->sn_assoc_change.sac_state) {
		case SCTP_COMM_UP:
			if (a->comm_up)
				return true;
			a->comm_up = true;
			info_fill(a);
			a->up_due = true;
			return true;
		case SCTP_COMM_LOST:
			e = sock_err(a->fd);
			assoc_finish(a, e == ETIMEDOUT ? -ETIMEDOUT
						       : -ECONNRESET, false);
			return false;
		case SCTP_CANT_STR_ASSOC:
			e = sock_err(a->fd);
			assoc_finish(a, e == ETIMEDOUT ? -ETIMEDOUT
						       : -ECONNREFUSED, false);
			return false;
		case SCTP_SHUTDOWN_COMP:
			assoc_finish(a, 0, false);
			return false;
		case SCTP_RESTART:
			/* The peer lost its association and made a new
			 * one: whatever DDP state rode on it is gone. */
			assoc_finish(a, -ECONNRESET, true);
			return false;
		}
		return true;
	case SCTP_ADAPTATION_INDICATION:
		if (len < sizeof(sn->sn_adaptation_event))
			return true;
		a->base.info.peer_adapt_seen = true;
		a->base.info.peer_adapt =
			sn->sn_adaptation_event.sai_adaptation_ind;
		if (a->up_due)
			give_up(a);
		return !a->over;
	case SCTP_SENDER_DRY_EVENT:
		on_dry_event(a);
		return !a->over;
	case SCTP_SHUTDOWN_EVENT:
		a->going_down = true;
		return true;
	}
	return true;
}

/* One whole user message, at buf[0..rx_len): to the upcall, in a
 * buffer of its own. */
static bool on_message(struct kern_assoc *a, uint8_t *buf)
{
	struct kern_stack *k = KSTACK(a->base.stack);
	size_t len = a->rx_len;
	uint8_t *m;

	a->rx_len = 0;
	if (!a->up_given && !a->up_due) {
		/* Data before COMM_UP: not from this kernel. */
		if (!a->comm_up) {
			a->comm_up = true;
			info_fill(a);
		}
		a->up_due = true;
	}
	if (a->up_due)
		give_up(a);
	if (a->over)      /* aborted in up: a->rx goes with a */
		return false;
	if (len <= RX_COPY_MAX) {
		m = malloc(len);
		if (m)
			memcpy(m, buf, len);
		if (buf == a->rx) {
			/* Joined in a buffer of its own: the stack may
			 * have a new one by now. */
			if (!k->rxbuf)
				k->rxbuf = buf;
			else
				free(buf);
		}
	} else {
		/* Shrinking leaves the octets where they are. */
		m = realloc(buf, len);
		if (!m)
			m = buf;
		if (buf == k->rxbuf)
			k->rxbuf = NULL;
	}
	a->rx = NULL;
	if (!m) {
		UIW_DBG(1, "kernel SCTP: out of memory for a message: abort");
		assoc_kill(a, -ECONNABORTED);
		return false;
	}
	a->base.up->msg(a->base.ctx, (struct uiw_sctp_assoc *)a, a->rx_sid,
			a->rx_ppid, m, len);
	return !a->over;
}

/* The peer's SHUTDOWN was read to its end: recvmsg says 0 and epoll
 * says readable for as long as the socket lives, so wait for the events
 * still to come (SHUTDOWN_COMP, or COMM_LOST) edge-triggered. */
static void on_eof(struct kern_assoc *a)
{
	if (a->eof)
		return;
	a->eof = true;
	a->going_down = true;
	uiw_rt_watch_set(a->watch, EPOLLIN | EPOLLET |
			 (a->want_out ? EPOLLOUT : 0));
}

static void rcvinfo(struct kern_assoc *a, struct msghdr *mh)
{
	struct cmsghdr *c;

	a->rx_sid = 0;
	a->rx_ppid = 0;
	for (c = CMSG_FIRSTHDR(mh); c; c = CMSG_NXTHDR(mh, c)) {
		struct sctp_rcvinfo ri;

		if (c->cmsg_level != IPPROTO_SCTP ||
		    c->cmsg_type != SCTP_RCVINFO ||
		    c->cmsg_len < CMSG_LEN(sizeof(ri)))
			continue;
		memcpy(&ri, CMSG_DATA(c), sizeof(ri));
		a->rx_sid = ri.rcv_sid;
		a->rx_ppid = ntohl(ri.rcv_ppid);
	}
}

/* Reads what the socket has, up to a budget (the watch is level
 * triggered: the rest on the next round). */
static void rx_run(struct kern_assoc *a)
{
	struct kern_stack *k = KSTACK(a->base.stack);
	int n;

	for (n = 0; n < RX_BUDGET && !a->over; n++) {
		union {
			struct cmsghdr h;
			uint8_t b[CMSG_SPACE(sizeof(struct sctp_rcvinfo))];
		} cb;
		struct msghdr mh = { 0 };
		struct iovec iov;
		uint8_t *buf = a->rx;
		ssize_t r;
		int e;

		if (!buf) {
			if (!k->rxbuf && !(k->rxbuf = malloc(RX_MAX))) {
				UIW_DBG(1, "kernel SCTP: out of memory for "
					"receive: abort");
				assoc_kill(a, -ECONNABORTED);
				return;
			}
			buf = k->rxbuf;
		}
		iov.iov_base = buf + a->rx_len;
		iov.iov_len = RX_MAX - a->rx_len;
		mh.msg_iov = &iov;
		mh.msg_iovlen = 1;
		mh.msg_control = cb.b;
		mh.msg_controllen = sizeof(cb.b);
		r = recvmsg(a->fd, &mh, MSG_DONTWAIT);
		if (r < 0) {
			e = errno;
			if (e == EINTR)
				continue;
			if (e == EAGAIN || e == EWOULDBLOCK) {
				if (a->up_due)
					give_up(a);
				return;
			}
			/* An error without its event. */
			assoc_finish(a, e == ETIMEDOUT ? -ETIMEDOUT :
					e == ECONNREFUSED ? -ECONNREFUSED :
					-ECONNRESET, false);
			return;
		}
		if (mh.msg_flags & MSG_NOTIFICATION) {
			/* Never between the parts of a message (with
			 * interleave 0 the kernel holds it back), and never
			 * in parts itself (far smaller than RX_MAX). */
			if (!(mh.msg_flags & MSG_EOR))
				goto confused;
			if (!on_notification(a, buf + a->rx_len, r))
				return;
			continue;
		}
		if (!(mh.msg_flags & MSG_EOR) && r == 0) {
			if (a->up_due)
				give_up(a);
			if (!a->over)
				on_eof(a);
			return;
		}
		if (a->rx_len == 0)
			rcvinfo(a, &mh);
		a->rx_len += r;
		if (mh.msg_flags & MSG_EOR) {
			if (!on_message(a, buf))
				return;
			continue;
		}
		if (a->rx_len >= RX_MAX) {
			UIW_DBG(1, "kernel SCTP: association %p: a message "
				"of more than %d octets: abort", (void *)a,
				RX_MAX);
			assoc_kill(a, -EPROTO);
			return;
		}
		/* The rest follows: keep the buffer. */
		if (!a->rx) {
			a->rx = buf;
			k->rxbuf = NULL;
		}
	}
	return;
confused:
	UIW_DBG(1, "kernel SCTP: association %p: a notification in parts: "
		"abort", (void *)a);
	assoc_kill(a, -EPROTO);
}

static void assoc_cb(void *arg, uint32_t events)
{
	struct kern_assoc *a = arg;

	if ((events & EPOLLOUT) && a->want_out) {
		a->want_out = false;
		uiw_rt_watch_set(a->watch, EPOLLIN | (a->eof ? EPOLLET : 0));
		if (!a->going_down && a->base.up->writable)
			a->base.up->writable(a->base.ctx,
					     (struct uiw_sctp_assoc *)a);
		if (a->over)
			return;
	}
	if (events & (EPOLLIN | EPOLLERR | EPOLLHUP))
		rx_run(a);
}

/* ---- Listeners -------------------------------------------------------- */

static void lsn_free(struct kern_lsn *l)
{
	struct kern_stack *k = KSTACK(l->base.stack);

	if (l->prev)
		l->prev->next = l->next;
	else if (k->lsns == l)
		k->lsns = l->next;
	if (l->next)
		l->next->prev = l->prev;
	SBASE(l->base.stack)->users--;
	free(l);
}

static void lsn_cb(void *arg, uint32_t events)
{
	struct kern_lsn *l = arg;
	struct uiw_sctp_stack *s = l->base.stack;
	int n;

	l->in_cb = true;
	for (n = 0; n < l->backlog && !l->gone; n++) {
		struct linger lg = { .l_onoff = 1, .l_linger = 0 };
		struct kern_assoc *a;
		int fd = accept4(l->fd, NULL, NULL,
				 SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if (errno != EAGAIN && errno != EWOULDBLOCK)
				UIW_DBG(1, "kernel SCTP: accept: %s",
					strerror(errno));
			break;
		}
		a = assoc_new(s, fd, l->udp, false);
		if (!a) {
			UIW_DBG(1, "kernel SCTP: no room for an accepted "
				"association: abort");
			setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
			close(fd);
			continue;
		}
		a->base.up = l->up;
		a->base.ctx = l->ctx;
		a->lsn = l;
		a->next_pending = l->pending;
		l->pending = a;
		/* Its COMM_UP came over with it: up now, most likely (the
		 * upcall may unlisten). */
		rx_run(a);
	}
	l->in_cb = false;
	if (l->gone)
		lsn_free(l);
}

static int kern_listen(struct uiw_sctp_stack *s, const struct sockaddr *sa,
		       socklen_t salen, int backlog,
		       const struct uiw_sctp_up *up, void *ctx,
		       struct uiw_sctp_lsn **out)
{
	struct kern_lsn *l;
	socklen_t len;
	unsigned port = kern_udp_port();
	bool udp = port != 0;
	int fd, ret;

	if (!sa || (sa->sa_family != AF_INET && sa->sa_family != AF_INET6))
		return uiw_error(EAFNOSUPPORT, "kernel SCTP: listen: not an "
				 "IPv4 or IPv6 address");
	fd = sock_make(s, sa->sa_family, udp, false);
	if (fd < 0)
		return fd;
	if (bind(fd, sa, salen) < 0 || listen(fd, backlog > 0 ? backlog : 1) < 0) {
		ret = uiw_error(errno, "kernel SCTP: listen: %s",
				strerror(errno));
		goto fail;
	}
	l = calloc(1, sizeof(*l));
	if (!l) {
		ret = uiw_error(ENOMEM, "kernel SCTP: out of memory");
		goto fail;
	}
	l->base.stack = s;
	l->fd = fd;
	l->up = up;
	l->ctx = ctx;
	l->backlog = backlog > 0 ? backlog : 1;
	l->udp = udp;
	len = sizeof(l->addr);
	if (getsockname(fd, (struct sockaddr *)&l->addr, &len) < 0)
		memcpy(&l->addr, sa, salen < sizeof(l->addr) ? salen
							       : sizeof(l->addr));
	l->watch = uiw_rt_watch_add(SBASE(s)->rt, fd, EPOLLIN, lsn_cb, l);
	if (!l->watch) {
		ret = uiw_error(errno, "kernel SCTP: listen: %s",
				strerror(errno));
		free(l);
		goto fail;
	}
	SBASE(s)->users++;
	l->next = KSTACK(s)->lsns;
	if (l->next)
		l->next->prev = l;
	KSTACK(s)->lsns = l;
	if (udp && port != SBASE(s)->cfg.udp_port)
		UIW_DBG(1, "kernel SCTP: listening on UDP port %u "
			"(net.sctp.udp_port), not %u as configured", port,
			SBASE(s)->cfg.udp_port);
	else
		UIW_DBG(1, "kernel SCTP: listening (%s)",
			udp ? "UDP encapsulation on" : "plain SCTP");
	*out = (struct uiw_sctp_lsn *)l;
	return 0;
fail:
	close(fd);
	return ret;
}

static void kern_lsn_addr(const struct uiw_sctp_lsn *l,
			  struct sockaddr_storage *ss)
{
	*ss = ((const struct kern_lsn *)l)->addr;
}

static void kern_unlisten(struct uiw_sctp_lsn *lp)
{
	struct kern_lsn *l = KLSN(lp);

	if (l->gone)
		return;
	l->gone = true;
	uiw_rt_watch_del(l->watch);
	close(l->fd);
	l->fd = -1;
	/* Accepted ones nobody was told of yet go with it (ABORT). */
	while (l->pending) {
		struct kern_assoc *a = l->pending;

		l->pending = a->next_pending;
		a->lsn = NULL;
		a->next_pending = NULL;
		a->over = true;
		assoc_close_fd(a, true);
		assoc_free(a);
	}
	if (!l->in_cb)
		lsn_free(l);
}

/* ---- The calls of sctp.h --------------------------------------------- */

static int kern_connect(struct uiw_sctp_stack *s, const struct sockaddr *peer,
			socklen_t peerlen, const struct sockaddr *local,
			socklen_t locallen, uint16_t udp_port,
			const struct uiw_sctp_up *up, void *ctx,
			struct uiw_sctp_assoc **out)
{
	struct sockaddr_storage src;
	struct kern_assoc *a;
	bool udp = kern_udp_port() != 0;
	int fd, ret;

	if (!peer || (peer->sa_family != AF_INET &&
		      peer->sa_family != AF_INET6))
		return uiw_error(EAFNOSUPPORT, "kernel SCTP: connect: not an "
				 "IPv4 or IPv6 address");
	if (local && local->sa_family != peer->sa_family)
		return uiw_error(EINVAL, "kernel SCTP: connect: local and "
				 "peer addresses of different families");
	if (!local) {
		ret = route_source(peer, peerlen, &src);
		if (ret)
			return uiw_error(-ret, "kernel SCTP: connect: no route "
					 "to the peer: %s", strerror(-ret));
		local = (const struct sockaddr *)&src;
		locallen = sa_len(src.ss_family);
	}
	fd = sock_make(s, peer->sa_family, udp, true);
	if (fd < 0)
		return fd;
	if (udp && udp_port != SBASE(s)->cfg.udp_port) {
		/* This connection's peer listens on another UDP port
		 * (RFC 6951 §6.1). */
		struct sctp_udpencaps ue;

		memset(&ue, 0, sizeof(ue));
		ue.sue_assoc_id = SCTP_FUTURE_ASSOC;
		ue.sue_port = htons(udp_port);
		if ((ret = sopt(fd, SCTP_REMOTE_UDP_ENCAPS_PORT, &ue,
				sizeof(ue), "SCTP_REMOTE_UDP_ENCAPS_PORT")))
			goto fail;
	}
	if (bind(fd, local, locallen) < 0) {
		ret = uiw_error(errno, "kernel SCTP: connect: bind: %s",
				strerror(errno));
		goto fail;
	}
	if (connect(fd, peer, peerlen) < 0 && errno != EINPROGRESS) {
		ret = uiw_error(errno, "kernel SCTP: connect: %s",
				strerror(errno));
		goto fail;
	}
	a = assoc_new(s, fd, udp, true);
	if (!a) {
		ret = uiw_error(ENOMEM, "kernel SCTP: out of memory");
		goto fail;
	}
	a->base.up = up;
	a->base.ctx = ctx;
	UIW_DBG(1, "kernel SCTP: association %p connecting (%s)", (void *)a,
		udp ? "UDP encapsulation on" : "plain SCTP");
	*out = (struct uiw_sctp_assoc *)a;
	return 0;
fail:
	close(fd);
	return ret;
}

static int kern_send(struct uiw_sctp_assoc *ap, uint16_t sid, uint32_t ppid,
		     const struct iovec *iov, int iovcnt)
{
	struct kern_assoc *a = KASSOC(ap);
	union {
		struct cmsghdr h;
		uint8_t b[CMSG_SPACE(sizeof(struct sctp_sndinfo))];
	} cb;
	struct sctp_sndinfo si = {
		.snd_sid = sid,
		.snd_flags = SCTP_UNORDERED,         /* RFC 5043 §10 */
		.snd_ppid = htonl(ppid),
	};
	struct msghdr mh = { 0 };
	struct cmsghdr *c;
	size_t len = 0;
	int i;

	if (a->over || a->going_down || !a->up_given || a->fd < 0)
		return -ENOTCONN;
	if (sid >= a->base.info.streams)
		return -EINVAL;
	for (i = 0; i < iovcnt; i++)
		len += iov[i].iov_len;
	if (len > a->base.info.maxseg)
		return -EMSGSIZE;
	if (len == 0)
		return -EINVAL;
	memset(&cb, 0, sizeof(cb));
	mh.msg_iov = (struct iovec *)iov;
	mh.msg_iovlen = iovcnt;
	mh.msg_control = cb.b;
	mh.msg_controllen = sizeof(cb.b);
	c = CMSG_FIRSTHDR(&mh);
	c->cmsg_level = IPPROTO_SCTP;
	c->cmsg_type = SCTP_SNDINFO;
	c->cmsg_len = CMSG_LEN(sizeof(si));
	memcpy(CMSG_DATA(c), &si, sizeof(si));
	while (sendmsg(a->fd, &mh, MSG_DONTWAIT | MSG_NOSIGNAL) < 0) {
		switch (errno) {
		case EINTR:
			continue;
		case EAGAIN:
#if EWOULDBLOCK != EAGAIN
		case EWOULDBLOCK:
#endif
			if (!a->want_out) {
				a->want_out = true;
				uiw_rt_watch_set(a->watch, EPOLLIN | EPOLLOUT |
						 (a->eof ? EPOLLET : 0));
			}
			return -EAGAIN;
		case EPIPE:
		case ENOTCONN:
		case ECONNRESET:
		case ESHUTDOWN:
			return -ENOTCONN;
		default:
			return -errno;
		}
	}
	return 0;
}

static int kern_unacked(struct uiw_sctp_assoc *ap)
{
	struct kern_assoc *a = KASSOC(ap);
	struct sctp_status st;
	int ret;

	if (a->over || a->fd < 0)
		return -ENOTCONN;
	ret = status_get(a, &st);
	return ret ? ret : (int)st.sstat_unackdata;
}

static void kern_watch_dry(struct uiw_sctp_assoc *ap)
{
	struct kern_assoc *a = KASSOC(ap);
	struct sctp_status st;

	if (a->over || a->fd < 0 || a->want_dry)
		return;
	a->want_dry = true;
	if (status_get(a, &st) == 0 && st.sstat_unackdata == 0) {
		a->dry_due = true;
		uiw_rt_post(SBASE(a->base.stack)->rt, &a->work);
		return;
	}
	/* Subscribing queues an event at once if the queue emptied
	 * since; otherwise the SACK that empties it does. */
	if (!a->dry_sub && event_set(a->fd, SCTP_SENDER_DRY_EVENT, true) == 0)
		a->dry_sub = true;
}

static void kern_shutdown(struct uiw_sctp_assoc *ap)
{
	struct kern_assoc *a = KASSOC(ap);

	if (a->over || a->fd < 0)
		return;
	if (!a->up_given) {
		a->shut_due = true;
		a->going_down = true;
		return;
	}
	if (!a->shut_sent)
		do_shutdown(a);
}

static void kern_abort(struct uiw_sctp_assoc *ap)
{
	assoc_kill(KASSOC(ap), -ECONNABORTED);
}

static void kern_buf_free(struct uiw_sctp_stack *s, void *buf)
{
	free(buf);
}

/* ---- The stack -------------------------------------------------------- */

/* Whether this kernel speaks SCTP: a socket of the protocol opens. */
static int kern_probe(void)
{
	int fd = socket(AF_INET, SOCK_STREAM, IPPROTO_SCTP);

	if (fd < 0)
		return uiw_error(EPROTONOSUPPORT, "kernel SCTP: this kernel "
				 "has no SCTP (socket(IPPROTO_SCTP): %s); "
				 "use the user-space stack (usrsctp over UDP)",
				 strerror(errno));
	close(fd);
	return 0;
}

static int kern_create(const struct uiw_sctp_config *cfg,
		       struct uiw_sctp_stack **out)
{
	struct kern_stack *k;
	int ret = kern_probe();

	if (ret)
		return ret;
	k = calloc(1, sizeof(*k));
	if (!k)
		return uiw_error(ENOMEM, "kernel SCTP: out of memory");
	k->base.cfg = *cfg;      /* sock_setup reads it; sctp.c sets it too */
	k->base.rt = uiw_rt_create("uiw-sctp-kern");
	if (!k->base.rt) {
		free(k);
		return -errno;
	}
	UIW_DBG(1, "kernel SCTP: stack up; net.sctp.udp_port %u (%s)",
		kern_udp_port(), kern_udp_port() ? "UDP encapsulation to "
		"the configuration's port" : "plain SCTP");
	*out = (struct uiw_sctp_stack *)k;
	return 0;
}

/* On the stack's thread: the layer above lets go, then what is left goes
 * without upcalls (an association aborted). */
static int destroy_on_thread(void *arg)
{
	struct kern_stack *k = arg;

	uiw_sctp_quiesce_run((struct uiw_sctp_stack *)k);
	if (k->base.users)
		UIW_DBG(1, "kernel SCTP: stack destroyed with %u listeners "
			"or associations", k->base.users);
	while (k->lsns)
		kern_unlisten((struct uiw_sctp_lsn *)k->lsns);
	while (k->assocs) {
		struct kern_assoc *a = k->assocs;

		uiw_rt_watch_del(a->watch);
		a->watch = NULL;
		if (a->fd >= 0)
			assoc_close_fd(a, true);
		assoc_free(a);
	}
	return 0;
}

static void kern_destroy(struct uiw_sctp_stack *s)
{
	struct kern_stack *k = KSTACK(s);

	uiw_rt_call(k->base.rt, destroy_on_thread, k);
	uiw_rt_destroy(k->base.rt);
	free(k->rxbuf);
	free(k);
}

const struct uiw_sctp_ops uiw_sctp_kern_ops = {
	.name = "kernel",
	.create = kern_create,
	.destroy = kern_destroy,
	.listen = kern_listen,
	.lsn_addr = kern_lsn_addr,
	.unlisten = kern_unlisten,
	.connect = kern_connect,
	.send = kern_send,
	.unacked = kern_unacked,
	.watch_dry = kern_watch_dry,
	.shutdown = kern_shutdown,
	.abort = kern_abort,
	.buf_free = kern_buf_free,
};
