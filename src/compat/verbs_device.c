/*
 * The drop-in libibverbs.so.1: the one device, uiwarp0, its contexts and
 * what they report (device and port attributes, GID, P_Key), async events,
 * and the small helpers of the library (log, errors, fork, sysfs).
 */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <limits.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "verbs_priv.h"

/* ibv_query_port is a macro of verbs.h over the exported function. */
#undef ibv_query_port

#define VC_DEV_NAME "uiwarp0"

/* ---- Log and errors ------------------------------------------------------ */

void uiw_compat_log(const char *fmt, ...)
{
	const char *dbg = getenv("UIWARP_DEBUG");
	char line[512];
	va_list ap;

	if (!dbg || !*dbg)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	/* One write: lines of several threads do not interleave. */
	fprintf(stderr, "uiwarp: %s\n", line);
}

int uiw_compat_unsupported(const char *what)
{
	uiw_compat_log("%s is not supported", what);
	errno = EOPNOTSUPP;
	return EOPNOTSUPP;
}

int vc_err(int uiw_ret, const char *what)
{
	int err = uiw_ret < 0 ? -uiw_ret : EINVAL;

	uiw_compat_log("%s: %s", what, uiw_last_error());
	errno = err;
	return err;
}

void *vc_err_null(int err, const char *what)
{
	uiw_compat_log("%s: %s", what, uiw_last_error());
	errno = err ? err : EINVAL;
	return NULL;
}

/* ---- The device ---------------------------------------------------------- */

static struct ibv_device vc_device = {
	.node_type = IBV_NODE_RNIC,
	.transport_type = IBV_TRANSPORT_IWARP,
	.name = VC_DEV_NAME,
	.dev_name = "uverbs-" VC_DEV_NAME,
	/* No sysfs entries exist: ibv_read_sysfs_file on these fails, as
	 * ibv_devinfo expects of a device without a board_id. */
	.dev_path = "/sys/class/infiniband_verbs/uverbs-" VC_DEV_NAME,
	.ibdev_path = "/sys/class/infiniband/" VC_DEV_NAME,
};

static pthread_once_t vc_dev_once = PTHREAD_ONCE_INIT;
static struct uiw_device *vc_udev;
static int vc_udev_errno;

static void vc_dev_open(void)
{
	vc_udev = uiw_device_open(VC_DEV_NAME);
	if (!vc_udev) {
		vc_udev_errno = errno ? errno : ENODEV;
		uiw_compat_log("cannot open the device: %s", uiw_last_error());
	}
}

struct uiw_device *uiw_compat_device(void)
{
	pthread_once(&vc_dev_once, vc_dev_open);
	if (!vc_udev)
		errno = vc_udev_errno;
	return vc_udev;
}

static pthread_mutex_t vc_shared_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ibv_context *vc_shared_ctx;

struct ibv_context *uiw_compat_context(void)
{
	struct ibv_context *c;

	pthread_mutex_lock(&vc_shared_lock);
	if (!vc_shared_ctx)
		vc_shared_ctx = ibv_open_device(&vc_device);
	c = vc_shared_ctx;
	pthread_mutex_unlock(&vc_shared_lock);
	return c;
}

int uiw_compat_dev_addr(struct sockaddr_storage *ss, socklen_t *len)
{
	const char *env = getenv("UIWARP_ADDR");
	struct sockaddr_in *sin = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;
	struct ifaddrs *ifa, *i;

	memset(ss, 0, sizeof(*ss));
	if (env && *env) {
		if (inet_pton(AF_INET, env, &sin->sin_addr) == 1) {
			sin->sin_family = AF_INET;
			*len = sizeof(*sin);
			return 0;
		}
		if (inet_pton(AF_INET6, env, &sin6->sin6_addr) == 1) {
			sin6->sin6_family = AF_INET6;
			*len = sizeof(*sin6);
			return 0;
		}
		uiw_compat_log("UIWARP_ADDR=%s is not a numeric IPv4 or IPv6 "
			       "address", env);
		errno = EINVAL;
		return -EINVAL;
	}
	if (getifaddrs(&ifa) == 0) {
		for (i = ifa; i; i = i->ifa_next) {
			if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET ||
			    !(i->ifa_flags & IFF_UP) ||
			    (i->ifa_flags & IFF_LOOPBACK))
				continue;
			memcpy(sin, i->ifa_addr, sizeof(*sin));
			sin->sin_port = 0;
			*len = sizeof(*sin);
			freeifaddrs(ifa);
			return 0;
		}
		freeifaddrs(ifa);
	}
	sin->sin_family = AF_INET;
	sin->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	*len = sizeof(*sin);
	return 0;
}

/* The GID is the device address as an IPv6 address (an IPv4 address
 * IPv4-mapped, RFC 4291 §2.5.5.2), as iWARP devices derive theirs from
 * their network interface. */
static void vc_gid(union ibv_gid *gid)
{
	struct sockaddr_storage ss;
	socklen_t len;

	memset(gid, 0, sizeof(*gid));
	if (uiw_compat_dev_addr(&ss, &len) < 0)
		return;
	if (ss.ss_family == AF_INET6) {
		memcpy(gid->raw, &((struct sockaddr_in6 *)&ss)->sin6_addr, 16);
	} else {
		gid->raw[10] = 0xff;
		gid->raw[11] = 0xff;
		memcpy(gid->raw + 12, &((struct sockaddr_in *)&ss)->sin_addr, 4);
	}
}

/* The node GUID (EUI-64, network order) from the address: a locally
 * administered EUI-64 (bit 0x02 of the first octet) whose low 32 bits are
 * the IPv4 address, or the IPv6 address's two halves XORed. */
static __be64 vc_guid(void)
{
	union ibv_gid gid;
	uint64_t hi, lo;

	vc_gid(&gid);
	memcpy(&hi, gid.raw, 8);
	memcpy(&lo, gid.raw + 8, 8);
	hi = be64toh(hi);
	lo = be64toh(lo);
	if (hi == 0 && (lo >> 32) == 0xffff)
		lo &= 0xffffffffu;
	else
		lo ^= hi;
	lo = (lo & 0x00ffffffffffffffULL) | (0x02ULL << 56);
	return htobe64(lo);
}

/* The interface that holds the device address: its index and MTU. */
static void vc_ifinfo(unsigned *ifindex, int *mtu)
{
	struct sockaddr_storage ss;
	struct ifaddrs *ifa, *i;
	socklen_t len;

	*ifindex = 0;
	*mtu = 0;
	if (uiw_compat_dev_addr(&ss, &len) < 0 || getifaddrs(&ifa) < 0)
		return;
	for (i = ifa; i; i = i->ifa_next) {
		const struct sockaddr *a = i->ifa_addr;
		struct ifreq ifr;
		int s;

		if (!a || a->sa_family != ss.ss_family)
			continue;
		if (a->sa_family == AF_INET ?
		    memcmp(&((struct sockaddr_in *)a)->sin_addr,
			   &((struct sockaddr_in *)&ss)->sin_addr, 4) :
		    memcmp(&((struct sockaddr_in6 *)a)->sin6_addr,
			   &((struct sockaddr_in6 *)&ss)->sin6_addr, 16))
			continue;
		*ifindex = if_nametoindex(i->ifa_name);
		s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
		if (s >= 0) {
			memset(&ifr, 0, sizeof(ifr));
			snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s",
				 i->ifa_name);
			if (ioctl(s, SIOCGIFMTU, &ifr) == 0)
				*mtu = ifr.ifr_mtu;
			close(s);
		}
		break;
	}
	freeifaddrs(ifa);
}

/* The largest verbs MTU that fits the interface's MTU, as siw reports
 * its netdev's; 4096 when the interface is unknown (an address of
 * UIWARP_ADDR that no interface holds). */
static enum ibv_mtu vc_active_mtu(void)
{
	unsigned ifindex;
	int mtu;

	vc_ifinfo(&ifindex, &mtu);
	if (mtu <= 0 || mtu >= 4096)
		return IBV_MTU_4096;
	if (mtu >= 2048)
		return IBV_MTU_2048;
	if (mtu >= 1024)
		return IBV_MTU_1024;
	if (mtu >= 512)
		return IBV_MTU_512;
	return IBV_MTU_256;
}

struct ibv_device **ibv_get_device_list(int *num_devices)
{
	struct ibv_device **l = calloc(2, sizeof(*l));

	if (!l) {
		errno = ENOMEM;
		return NULL;
	}
	l[0] = &vc_device;
	if (num_devices)
		*num_devices = 1;
	return l;
}

void ibv_free_device_list(struct ibv_device **list)
{
	free(list);
}

const char *ibv_get_device_name(struct ibv_device *device)
{
	return device ? device->name : NULL;
}

__be64 ibv_get_device_guid(struct ibv_device *device)
{
	return vc_guid();
}

int ibv_get_device_index(struct ibv_device *device)
{
	return device == &vc_device ? 0 : -1;
}

/* ---- Device and port attributes ------------------------------------------ */

static int vc_device_attr(struct ibv_context *c, struct ibv_device_attr_ex *a)
{
	struct uiw_device_attr u;
	int ret;

	ret = uiw_device_query(vc_dev(c), &u);
	if (ret < 0)
		return vc_err(ret, "query_device");
	memset(a, 0, sizeof(*a));
	snprintf(a->orig_attr.fw_ver, sizeof(a->orig_attr.fw_ver),
		 "uiwarp %d.%d", UIW_VERSION_MAJOR, UIW_VERSION_MINOR);
	a->orig_attr.node_guid = vc_guid();
	a->orig_attr.sys_image_guid = a->orig_attr.node_guid;
	/* Any length the address space holds (uiw_reg_mr). */
	a->orig_attr.max_mr_size = UINT64_MAX;
	a->orig_attr.page_size_cap = (uint64_t)sysconf(_SC_PAGESIZE);
	/* vendor_id 0 and vendor_part_id 0: no vendor's device, so that
	 * programs (perftest) take the generic paths. */
	a->orig_attr.max_qp = (int)u.max_qp;
	a->orig_attr.max_qp_wr = (int)u.max_qp_wr;
	a->orig_attr.device_cap_flags = IBV_DEVICE_SYS_IMAGE_GUID;
	a->orig_attr.max_sge = (int)u.max_sge;
	/* An RDMA Read Request names one sink buffer (RFC 5040 §4.4): the
	 * Read work request takes one SGE. */
	a->orig_attr.max_sge_rd = 1;
	a->orig_attr.max_cq = (int)u.max_cq;
	a->orig_attr.max_cqe = (int)u.max_cqe;
	a->orig_attr.max_mr = (int)u.max_mr;
	/* No PD limit of its own: as many as there can be MRs. */
	a->orig_attr.max_pd = (int)u.max_mr;
	a->orig_attr.max_qp_rd_atom = (int)(u.max_ird ? u.max_ird : 1);
	a->orig_attr.max_qp_init_rd_atom = (int)(u.max_ord ? u.max_ord : 1);
	a->orig_attr.max_res_rd_atom = a->orig_attr.max_qp_rd_atom *
				       a->orig_attr.max_qp;
	/* RFC 7306 atomics, executed by the responder in order with its
	 * other atomics: atomic with respect to this device. */
	a->orig_attr.atomic_cap = (u.cap_flags & UIW_DEV_CAP_ATOMIC) ?
				  IBV_ATOMIC_HCA : IBV_ATOMIC_NONE;
	/* Shared receive queues as deep and wide as a QP's receive queue. */
	a->orig_attr.max_srq = (int)u.max_qp;
	a->orig_attr.max_srq_wr = (int)u.max_qp_wr;
	a->orig_attr.max_srq_sge = (int)u.max_sge;
	a->orig_attr.max_pkeys = 1;
	a->orig_attr.phys_port_cnt = 1;
	a->device_cap_flags_ex = a->orig_attr.device_cap_flags;
	a->phys_port_cnt_ex = 1;
	return 0;
}

int ibv_query_device(struct ibv_context *context,
		     struct ibv_device_attr *device_attr)
{
	struct ibv_device_attr_ex a;
	int ret;

	ret = vc_device_attr(context, &a);
	if (!ret)
		*device_attr = a.orig_attr;
	return ret;
}

static int vc_query_device_ex(struct ibv_context *context,
			      const struct ibv_query_device_ex_input *input,
			      struct ibv_device_attr_ex *attr, size_t attr_size)
{
	struct ibv_device_attr_ex a;
	int ret;

	if (input && input->comp_mask)
		return EINVAL;
	if (attr_size < sizeof(attr->orig_attr))
		return EINVAL;
	ret = vc_device_attr(context, &a);
	if (ret)
		return ret;
	/* A caller built against an older verbs.h has a shorter struct. */
	memcpy(attr, &a, attr_size < sizeof(a) ? attr_size : sizeof(a));
	return 0;
}

static int vc_port_attr(struct ibv_context *c, uint8_t port,
			struct ibv_port_attr *p)
{
	struct uiw_device_attr u;
	int ret;

	if (port != 1)
		return EINVAL;
	ret = uiw_device_query(vc_dev(c), &u);
	if (ret < 0)
		return vc_err(ret, "query_port");
	memset(p, 0, sizeof(*p));
	p->state = IBV_PORT_ACTIVE;
	p->max_mtu = IBV_MTU_4096;
	p->active_mtu = vc_active_mtu();
	p->gid_tbl_len = 1;
	p->port_cap_flags = IBV_PORT_CM_SUP;
	p->max_msg_sz = u.max_msg_size;
	p->pkey_tbl_len = 1;
	p->max_vl_num = 1;
	/* Nominal width and speed (4X EDR): a software device has no line
	 * rate of its own, and programs want a valid pair. */
	p->active_width = 2;
	p->active_speed = 32;
	p->phys_state = 5;           /* LinkUp */
	p->link_layer = IBV_LINK_LAYER_ETHERNET;
	return 0;
}

/* The exported ibv_query_port takes rdma-core's older, shorter struct
 * (everything before port_cap_flags2); verbs.h's inline ibv_query_port
 * calls query_port of the verbs context with the full one. */
int ibv_query_port(struct ibv_context *context, uint8_t port_num,
		   struct _compat_ibv_port_attr *port_attr)
{
	struct ibv_port_attr p;
	int ret;

	ret = vc_port_attr(context, port_num, &p);
	if (!ret)
		memcpy(port_attr, &p,
		       offsetof(struct ibv_port_attr, port_cap_flags2));
	return ret;
}

static int vc_query_port(struct ibv_context *context, uint8_t port_num,
			 struct ibv_port_attr *port_attr, size_t len)
{
	struct ibv_port_attr p;
	int ret;

	ret = vc_port_attr(context, port_num, &p);
	if (!ret)
		memcpy(port_attr, &p, len < sizeof(p) ? len : sizeof(p));
	return ret;
}

static int vc_gid_entry(uint32_t port_num, uint32_t index,
			struct ibv_gid_entry *e)
{
	unsigned ifindex;
	int mtu;

	if (port_num != 1 || index != 0)
		return EINVAL;
	memset(e, 0, sizeof(*e));
	vc_gid(&e->gid);
	e->gid_index = 0;
	e->port_num = 1;
	/* rdma-core 44 behaviour: iWARP devices report the IB GID type. */
	e->gid_type = IBV_GID_TYPE_IB;
	vc_ifinfo(&ifindex, &mtu);
	e->ndev_ifindex = ifindex;
	return 0;
}

int ibv_query_gid(struct ibv_context *context, uint8_t port_num, int index,
		  union ibv_gid *gid)
{
	struct ibv_gid_entry e;

	if (index < 0 || vc_gid_entry(port_num, (uint32_t)index, &e)) {
		errno = EINVAL;
		return -1;
	}
	*gid = e.gid;
	return 0;
}

int _ibv_query_gid_ex(struct ibv_context *context, uint32_t port_num,
		      uint32_t gid_index, struct ibv_gid_entry *entry,
		      uint32_t flags, size_t entry_size)
{
	struct ibv_gid_entry e;
	int ret;

	if (flags || entry_size < sizeof(e))
		return EINVAL;
	ret = vc_gid_entry(port_num, gid_index, &e);
	if (!ret)
		*entry = e;
	return ret;
}

ssize_t _ibv_query_gid_table(struct ibv_context *context,
			     struct ibv_gid_entry *entries, size_t max_entries,
			     uint32_t flags, size_t entry_size)
{
	if (flags || entry_size < sizeof(*entries))
		return -EINVAL;
	if (max_entries < 1)
		return -EINVAL;
	vc_gid_entry(1, 0, entries);
	return 1;
}

/* rdma-core 44's private ibv_query_gid_type (ibv_devinfo prints GIDs
 * with it): 0 is its "IB/RoCE v1" sysfs type, what an iWARP GID is. */
int ibv_query_gid_type(struct ibv_context *context, uint8_t port_num,
		       unsigned int index, int *type);
int ibv_query_gid_type(struct ibv_context *context, uint8_t port_num,
		       unsigned int index, int *type)
{
	if (port_num != 1 || index != 0) {
		errno = EINVAL;
		return -1;
	}
	*type = 0;
	return 0;
}

/* One P_Key, the default full-membership one (InfiniBand Architecture
 * 10.9.1.2), as every iWARP device reports. */
int ibv_query_pkey(struct ibv_context *context, uint8_t port_num, int index,
		   __be16 *pkey)
{
	if (port_num != 1 || index != 0) {
		errno = EINVAL;
		return -1;
	}
	*pkey = htobe16(0xffff);
	return 0;
}

int ibv_get_pkey_index(struct ibv_context *context, uint8_t port_num,
		       __be16 pkey)
{
	if (port_num != 1 || (be16toh(pkey) & 0x7fff) != 0x7fff) {
		errno = ENOENT;
		return -1;
	}
	return 0;
}

/* ---- Contexts ------------------------------------------------------------ */

struct ibv_context *ibv_open_device(struct ibv_device *device)
{
	struct uiw_device *dev;
	struct vc_context *c;
	struct ibv_context *ctx;
	int fd;

	if (device != &vc_device) {
		errno = ENODEV;
		return NULL;
	}
	dev = uiw_compat_device();
	if (!dev)
		return NULL;
	c = calloc(1, sizeof(*c));
	if (!c) {
		errno = ENOMEM;
		return NULL;
	}
	c->dev = dev;
	c->own_async_fd = -1;
	ctx = &c->vctx.context;
	ctx->device = device;
	ctx->cmd_fd = -1;
	ctx->num_comp_vectors = 1;
	ctx->abi_compat = __VERBS_ABI_IS_EXTENDED;
	pthread_mutex_init(&ctx->mutex, NULL);
	fd = uiw_device_async_fd(dev);
	if (fd < 0) {
		/* Without the engine's async events, a descriptor that never
		 * becomes readable: programs poll it with the others. */
		uiw_compat_log("async events: %s", uiw_last_error());
		fd = eventfd(0, EFD_CLOEXEC);
		c->own_async_fd = fd;
	}
	ctx->async_fd = fd;
	c->vctx.sz = sizeof(c->vctx);
	c->vctx.query_port = vc_query_port;
	c->vctx.query_device_ex = vc_query_device_ex;
	c->vctx.create_qp_ex = vc_create_qp_ex;
	c->vctx.create_srq_ex = vc_create_srq_ex;
	c->vctx.create_cq_ex = vc_create_cq_ex;
	ctx->ops.poll_cq = vc_poll_cq;
	ctx->ops.req_notify_cq = vc_req_notify_cq;
	ctx->ops.post_send = vc_post_send;
	ctx->ops.post_recv = vc_post_recv;
	ctx->ops.post_srq_recv = vc_post_srq_recv;
	vc_set_unsupported_ops(&c->vctx);
	return ctx;
}

int ibv_close_device(struct ibv_context *context)
{
	struct vc_context *c = vc_ctx(context);

	pthread_mutex_lock(&vc_shared_lock);
	if (context == vc_shared_ctx)
		vc_shared_ctx = NULL;
	pthread_mutex_unlock(&vc_shared_lock);
	if (c->own_async_fd >= 0)
		close(c->own_async_fd);
	pthread_mutex_destroy(&context->mutex);
	free(c);
	return 0;
}

/* ---- Async events -------------------------------------------------------- */

/* One row per uiw_ async event: the verbs event and what it is about. */
enum { VC_EV_QP, VC_EV_SRQ, VC_EV_CQ };
static const struct {
	enum ibv_event_type type;
	int element;
} vc_async_rows[] = {
	[UIW_EVENT_QP_FATAL] = { IBV_EVENT_QP_FATAL, VC_EV_QP },
	[UIW_EVENT_QP_ACCESS_ERR] = { IBV_EVENT_QP_ACCESS_ERR, VC_EV_QP },
	[UIW_EVENT_QP_LAST_WQE_REACHED] = { IBV_EVENT_QP_LAST_WQE_REACHED,
					    VC_EV_QP },
	[UIW_EVENT_SRQ_LIMIT_REACHED] = { IBV_EVENT_SRQ_LIMIT_REACHED,
					  VC_EV_SRQ },
	[UIW_EVENT_CQ_ERR] = { IBV_EVENT_CQ_ERR, VC_EV_CQ },
};

/* Fills the verbs event of a uiw_ event and counts it as handed out;
 * false when the object it names is not a verbs object of ours. */
static bool vc_async_convert(struct vc_context *c,
			     const struct uiw_async_event *u,
			     struct ibv_async_event *ev)
{
	struct vc_qp *qp;
	struct vc_srq *srq;
	struct ibv_cq *cq;

	if ((unsigned)u->type >= sizeof(vc_async_rows) / sizeof(vc_async_rows[0]) ||
	    !vc_async_rows[u->type].type)
		return false;
	ev->event_type = vc_async_rows[u->type].type;
	switch (vc_async_rows[u->type].element) {
	case VC_EV_QP:
		qp = u->qp ? uiw_qp_context(u->qp) : NULL;
		if (!qp)
			return false;
		ev->element.qp = &qp->qp;
		pthread_mutex_lock(&qp->qp.mutex);
		qp->events_reported++;
		pthread_mutex_unlock(&qp->qp.mutex);
		return true;
	case VC_EV_SRQ:
		srq = u->srq ? uiw_srq_context(u->srq) : NULL;
		if (!srq)
			return false;
		ev->element.srq = &srq->srq;
		pthread_mutex_lock(&srq->srq.mutex);
		srq->events_reported++;
		pthread_mutex_unlock(&srq->srq.mutex);
		return true;
	default:
		cq = vc_cq_of(c, u->cq);
		if (!cq)
			return false;
		ev->element.cq = cq;
		return true;
	}
}

int ibv_get_async_event(struct ibv_context *context,
			struct ibv_async_event *event)
{
	struct vc_context *c = vc_ctx(context);
	struct uiw_async_event u;
	int fl, ret;

	/* rdma-core 44 behaviour: a read of the async fd, so O_NONBLOCK on
	 * it makes this fail with EAGAIN instead of waiting. */
	fl = fcntl(context->async_fd, F_GETFL);
	for (;;) {
		ret = uiw_device_get_async_event(c->dev, &u,
				(fl >= 0 && (fl & O_NONBLOCK)) ? 0 : -1);
		if (ret < 0) {
			errno = -ret;
			if (ret != -EAGAIN && ret != -EINTR)
				uiw_compat_log("ibv_get_async_event: %s",
					       uiw_last_error());
			return -1;
		}
		if (u.lost)
			uiw_compat_log("%u async events were lost", u.lost);
		if (vc_async_convert(c, &u, event))
			return 0;
		uiw_compat_log("async event %s about an object unknown here",
			       uiw_async_event_str(u.type));
	}
}

void ibv_ack_async_event(struct ibv_async_event *event)
{
	pthread_mutex_t *m;
	pthread_cond_t *cv;
	uint32_t *n;

	switch (event->event_type) {
	case IBV_EVENT_CQ_ERR:
		m = &event->element.cq->mutex;
		cv = &event->element.cq->cond;
		n = &event->element.cq->async_events_completed;
		break;
	case IBV_EVENT_SRQ_ERR:
	case IBV_EVENT_SRQ_LIMIT_REACHED:
		m = &event->element.srq->mutex;
		cv = &event->element.srq->cond;
		n = &event->element.srq->events_completed;
		break;
	case IBV_EVENT_QP_FATAL:
	case IBV_EVENT_QP_REQ_ERR:
	case IBV_EVENT_QP_ACCESS_ERR:
	case IBV_EVENT_COMM_EST:
	case IBV_EVENT_SQ_DRAINED:
	case IBV_EVENT_PATH_MIG:
	case IBV_EVENT_PATH_MIG_ERR:
	case IBV_EVENT_QP_LAST_WQE_REACHED:
		m = &event->element.qp->mutex;
		cv = &event->element.qp->cond;
		n = &event->element.qp->events_completed;
		break;
	default:
		return;              /* port and device events: nothing */
	}
	pthread_mutex_lock(m);
	++*n;
	pthread_cond_broadcast(cv);
	pthread_mutex_unlock(m);
}

/* ---- Fork and sysfs ------------------------------------------------------ */

/* Registered memory is never pinned by a kernel here, so fork() needs no
 * care: rdma-core 44's IBV_FORK_UNNEEDED. */
int ibv_fork_init(void)
{
	return 0;
}

enum ibv_fork_status ibv_is_fork_initialized(void)
{
	return IBV_FORK_UNNEEDED;
}

int ibv_dontfork_range(void *base, size_t size);
int ibv_dofork_range(void *base, size_t size);

int ibv_dontfork_range(void *base, size_t size)
{
	return 0;
}

int ibv_dofork_range(void *base, size_t size)
{
	return 0;
}

const char *ibv_get_sysfs_path(void);
const char *ibv_get_sysfs_path(void)
{
	const char *env = getenv("SYSFS_PATH");

	return env && *env ? env : "/sys";
}

/* Reads DIR/FILE into buf (NUL-terminated, the trailing newline
 * removed); returns its length or -1.  The device has no sysfs entries,
 * so for its paths this fails, which programs take as "absent". */
int ibv_read_sysfs_file(const char *dir, const char *file, char *buf,
			size_t size);
int ibv_read_sysfs_file(const char *dir, const char *file, char *buf,
			size_t size)
{
	char path[PATH_MAX];
	ssize_t n;
	int fd;

	if (!size || snprintf(path, sizeof(path), "%s/%s", dir, file) >=
	    (int)sizeof(path)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, size);
	close(fd);
	if (n < 0)
		return -1;
	if ((size_t)n == size)
		n--;
	buf[n] = '\0';
	if (n > 0 && buf[n - 1] == '\n')
		buf[--n] = '\0';
	return (int)n;
}
