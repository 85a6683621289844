package blockdev

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/go-mdraid/mdraid/sysfs"
)

// ErrNoPathID is matched (with errors.Is) by a [*PathIDError]: udev would
// create no by-path link for the device, or this package does not know
// the bus.
var ErrNoPathID = errors.New("blockdev: no by-path identity")

// PathIDError says why a device has no by-path identity. Partial holds
// the part of the path that could be computed (possibly empty); it is not
// an identity.
type PathIDError struct {
	Name    string // kernel name of the device
	Partial string // the path elements computed before giving up
	Reason  string
}

// Error returns the device, the reason and the partial path.
func (e *PathIDError) Error() string {
	s := fmt.Sprintf("blockdev: %s: no by-path identity: %s", e.Name, e.Reason)
	if e.Partial != "" {
		s += fmt.Sprintf(" (partial %q)", e.Partial)
	}
	return s
}

// Is reports whether target is [ErrNoPathID].
func (e *PathIDError) Is(target error) bool { return target == ErrNoPathID }

// PathID returns the by-path identity of the block device name (such as
// "vdb" or "sda1"): the name udev gives its /dev/disk/by-path link, such
// as "pci-0000:00:10.0" or "pci-0000:00:1f.2-ata-1.0-part1". It is a pure
// function of the sysfs tree, so the identity of a slot (a port, a bay)
// can be computed on any machine from a capture.
//
// The rules are those of the path_id builtin of systemd 252 (Debian 12,
// RHEL 9) and its 60-persistent-storage.rules, walking from the device up
// through its parents:
//
//   - pci: "pci-DOMAIN:BUS:DEV.FN" of the nearest PCI device; bridges
//     above it are skipped.
//   - virtio: skipped (virtio-blk on PCI is just "pci-0000:00:10.0").
//   - ATA (a SCSI device below an ataN port): "ata-PORT.TARGET", or
//     "ata-PORT.PMP.0" behind a port multiplier, with PORT the ata_port's
//     port_no. This is the scheme of systemd 248 and later; older udev
//     used "ata-PORT", which 252 still creates as a compatibility link
//     (ID_PATH_ATA_COMPAT, accepted by [CheckByPath]).
//   - SAS: "sas-phyN-lun-L" for a disk on an HBA phy, "sas-expADDR-phyN-lun-L"
//     behind an expander, "sas-ADDR-lun-L" on a wide port.
//   - Fibre Channel: "fc-PORTNAME-lun-L".
//   - other SCSI (virtio-scsi, USB storage): "scsi-H:B:T:L", the host
//     number rebased to the lowest hostN beside it.
//   - USB: "usb-0:PORTPATH" from the interface name (1-1.2:1.0 gives
//     "usb-0:1.2:1.0"); the USB bus number is dropped.
//   - NVMe: "nvme-NSID" from the namespace's nsid, and with native
//     multipath (nvme-subsystem) the PCI path of controller nvmeN.
//   - platform, acpi, xen: "platform-NAME" and so on.
//   - partitions: the disk's identity plus "-partN".
//
// Not produced: the "usbv" variants of systemd 254 and later, iSCSI,
// Hyper-V, cciss, s390 buses; and devices under devices/virtual (loop,
// md, dm), which udev gives no by-path link. For these, and whenever
// udev's path_id would fail (no known parent bus, or a block device with
// no known transport), the error is a [*PathIDError] matching
// [ErrNoPathID], and the returned string is its Partial. An unknown name
// gives an error matching fs.ErrNotExist.
func PathID(fsys sysfs.FS, name string) (string, error) {
	id, _, err := pathIDs(fsys, name)
	return id, err
}

// pathIDs returns ID_PATH and ID_PATH_ATA_COMPAT (which is empty except
// for ATA devices).
func pathIDs(fsys sysfs.FS, name string) (id, compat string, err error) {
	dir, err := deviceDir(fsys, name)
	if err != nil {
		return "", "", err
	}
	// A whole disk has no partition attribute: the failed open is cheaper
	// than reading uevent.
	_, err = tree{fsys}.read(dir, "partition")
	return pathIDsAt(fsys, name, dir, err == nil)
}

// PathID is [PathID] for a device already described: it takes the
// directory and whether it is a partition from d, and reads only what
// the walk up its parents needs.
func (d *Device) PathID(fsys sysfs.FS) (string, error) {
	id, _, err := pathIDsAt(fsys, d.Name, d.Dir, d.Partition > 0)
	return id, err
}

// pathIDsAt is pathIDs for the device name at dir, a partition or a
// whole disk.
func pathIDsAt(fsys sysfs.FS, name, dir string, partition bool) (id, compat string, err error) {
	t := tree{fsys}
	suffix := ""
	if partition {
		// udev imports ID_PATH from the disk and adds -part%n, %n being
		// the trailing digits of the partition's kernel name.
		suffix = "-part" + sysnum(path.Base(dir))
		dir = path.Dir(dir)
	}
	// The partitions of a disk share its walk: once per pass.
	walked := fsys.Memo("blockdev.pathid:"+dir, func() any {
		w := walker{t: t, dev: dir}
		var r [3]string
		r[0], r[1], r[2] = w.walk()
		return r
	}).([3]string)
	id, compat, reason := walked[0], walked[1], walked[2]
	if reason != "" {
		return id, "", &PathIDError{Name: name, Partial: id, Reason: reason}
	}
	if compat != "" {
		compat += suffix
	}
	return id + suffix, compat, nil
}

// walker computes a path the way udev's path_id does, over a sysfs tree.
// Directories are relative to the root, with '/' separators.
type walker struct {
	t   tree
	dev string // the whole disk being named

	elems       []string // path elements, outermost first
	compat      []string // the ATA compatibility path, once started
	hasCompat   bool
	transport   bool // a known transport was seen
	parentBus   bool // a bus with stable names was seen
	unsupported string

	// The walk asks about the same directories several times (parent,
	// skip, under); each answer is a system call or two.
	isDev map[string]bool
	subs  map[string]string
}

func (w *walker) prepend(s string) {
	w.elems = append([]string{s}, w.elems...)
	if w.hasCompat {
		w.compat = append([]string{s}, w.compat...)
	}
}

func (w *walker) walk() (id, compat, reason string) {
	if strings.Contains("/"+w.dev+"/", "/virtual/") && !w.under(w.dev, "nvme-subsystem") {
		return "", "", "virtual device"
	}
	// Each device is visited once. Only the nvme-subsystem step jumps
	// sideways (to the controller, found through class/nvme), and in a
	// hostile tree that can lead back below a device already walked.
	seen := map[string]bool{}
	for p := w.dev; p != ""; {
		if seen[p] {
			w.unsupported = fmt.Sprintf("the walk came back to %s (a loop in the sysfs tree)", p)
			break
		}
		seen[p] = true
		sub := w.subsystem(p)
		switch sub {
		case "":
		case "scsi":
			p = w.scsi(p)
			w.transport = true
		case "usb":
			p = w.usb(p)
			w.transport = true
		case "pci":
			w.prepend("pci-" + sysname(p))
			p = w.skip(p, "pci")
			w.parentBus = true
		case "platform", "acpi", "xen":
			w.prepend(sub + "-" + sysname(p))
			p = w.skip(p, sub)
			w.parentBus = true
			if sub == "platform" {
				w.transport = true
			}
		case "virtio":
			p = w.skip(p, "virtio")
			w.transport = true
		case "nvme", "nvme-subsystem":
			p = w.nvme(p, sub)
		case "cciss", "bcma", "serio", "scm", "ccw", "ccwgroup", "ap", "iucv", "spi":
			// udev names these; this package does not.
			if w.unsupported == "" {
				w.unsupported = fmt.Sprintf("bus %q is not supported", sub)
			}
		default:
			// Like udev, pass through everything else (block, mmc,
			// mmc_host, nvme-fabrics, ...).
		}
		if p == "" {
			break
		}
		p = w.parent(p)
	}
	id = strings.Join(w.elems, "-")
	if w.hasCompat {
		compat = strings.Join(w.compat, "-")
	}
	switch {
	case w.unsupported != "":
		return id, "", w.unsupported
	case id == "":
		return "", "", "no path elements"
	case !w.parentBus:
		return id, "", "no parent bus with stable names"
	case !w.transport:
		return id, "", "no known transport"
	}
	return id, compat, ""
}

// under reports whether some parent of dir has subsystem sub.
func (w *walker) under(dir, sub string) bool {
	for p := w.parent(dir); p != ""; p = w.parent(p) {
		if w.subsystem(p) == sub {
			return true
		}
	}
	return false
}

// isDevice reports whether dir is a device: it has a uevent file (every
// struct device does) or a subsystem link. Class directories such as
// block/ or nvme/ between devices have neither.
func (w *walker) isDevice(dir string) bool {
	if v, ok := w.isDev[dir]; ok {
		return v
	}
	v := false
	for _, n := range []string{"uevent", "subsystem"} {
		if _, err := os.Lstat(w.t.abs(dir, n)); err == nil {
			v = true
			break
		}
	}
	if w.isDev == nil {
		w.isDev = map[string]bool{}
	}
	w.isDev[dir] = v
	return v
}

// parent returns the nearest device above dir, or "".
func (w *walker) parent(dir string) string {
	for d := path.Dir(dir); d != "." && d != "/" && d != "devices"; d = path.Dir(d) {
		if w.isDevice(d) {
			return d
		}
	}
	return ""
}

// subsystem returns the name of the bus or class of dir.
func (w *walker) subsystem(dir string) string {
	if v, ok := w.subs[dir]; ok {
		return v
	}
	v := ""
	if t, err := os.Readlink(w.t.abs(dir, "subsystem")); err == nil {
		v = filepath.Base(t)
	}
	if w.subs == nil {
		w.subs = map[string]string{}
	}
	w.subs[dir] = v
	return v
}

func (w *walker) devtype(dir string) string { return w.t.uevent(dir)["DEVTYPE"] }

// skip climbs from dir while the parents are on bus sub and returns the
// topmost device on it.
func (w *walker) skip(dir, sub string) string {
	for p := w.parent(dir); p != "" && w.subsystem(p) == sub; p = w.parent(p) {
		dir = p
	}
	return dir
}

// parentWith returns the nearest device above dir on bus sub with
// DEVTYPE devtype, or "".
func (w *walker) parentWith(dir, sub, devtype string) string {
	for p := w.parent(dir); p != ""; p = w.parent(p) {
		if w.subsystem(p) == sub && w.devtype(p) == devtype {
			return p
		}
	}
	return ""
}

// lookup finds the device named sysname of subsystem sub (a class device
// such as ata_port/ata1 or sas_device/end_device-0:0) and returns its
// directory: through class/SUB/NAME or bus/SUB/devices/NAME, or else
// below near, where class devices of a device live (near/SUB/NAME).
func (w *walker) lookup(sub, name, near string) string {
	fsys := w.t.fsys
	for _, p := range []string{fsys.Path("class", sub, name), fsys.Path("bus", sub, "devices", name)} {
		if dir, err := fsys.Rel(p); err == nil {
			return dir
		}
	}
	if near != "" {
		dir := near + "/" + sub + "/" + name
		if fi, err := os.Stat(w.t.abs(dir, "")); err == nil && fi.IsDir() {
			return dir
		}
	}
	return ""
}

func (w *walker) attr(dir, name string) (string, bool) {
	v, err := w.t.read(dir, name)
	return v, err == nil
}

// scsi handles a device on the scsi bus. Only scsi_device entries (H:B:T:L)
// add to the path; hosts and targets pass through. The transport is told
// apart by the path, as udev does, since SCSI transports have no bus of
// their own. Returns "" to stop the walk.
func (w *walker) scsi(dir string) string {
	if w.devtype(dir) != "scsi_device" {
		return dir
	}
	if id, ok := w.attr(dir, "ieee1394_id"); ok {
		w.prepend("ieee1394-0x" + id)
		w.parentBus = true
		return w.skip(dir, "scsi")
	}
	full := "/" + dir // relative to the root: a root path containing "/ata" must not match
	switch {
	case strings.Contains(full, "/rport-"):
		w.parentBus = true
		return w.fc(dir)
	case strings.Contains(full, "/end_device-"):
		w.parentBus = true
		return w.sas(dir)
	case strings.Contains(full, "/session"):
		w.unsupported = "iSCSI is not supported"
		return ""
	case strings.Contains(full, "/ata"):
		return w.ata(dir)
	case strings.Contains(full, "/vmbus_"), strings.Contains(full, "/VMBUS"):
		w.unsupported = "Hyper-V SCSI is not supported"
		return ""
	}
	return w.scsiDefault(dir)
}

// lun formats the LUN of a scsi_device as udev does.
func lun(dir string) string {
	n, err := strconv.ParseUint(sysnum(path.Base(dir)), 10, 64)
	if err != nil {
		return ""
	}
	if n < 256 {
		return fmt.Sprintf("lun-%d", n)
	}
	return fmt.Sprintf("lun-0x%04x%04x00000000", n&0xffff, (n>>16)&0xffff)
}

func (w *walker) fc(dir string) string {
	target := w.parentWith(dir, "scsi", "scsi_target")
	if target == "" {
		return ""
	}
	fc := w.lookup("fc_transport", sysname(target), target)
	if fc == "" {
		return ""
	}
	port, ok := w.attr(fc, "port_name")
	if !ok {
		return ""
	}
	w.prepend(fmt.Sprintf("fc-%s-%s", port, lun(dir)))
	return dir
}

func (w *walker) sas(dir string) string {
	target := w.parentWith(dir, "scsi", "scsi_target")
	if target == "" {
		return ""
	}
	end := w.parent(target) // end_device-H:N
	if end == "" {
		return ""
	}
	endSAS := w.lookup("sas_device", sysname(end), end)
	if endSAS == "" {
		return ""
	}
	port := w.parent(end) // port-H:N
	if port == "" {
		return ""
	}
	portSAS := w.lookup("sas_port", sysname(port), port)
	if portSAS == "" {
		return ""
	}
	phys, ok := w.attr(portSAS, "num_phys")
	if !ok {
		return ""
	}
	if phys != "1" {
		// A wide port: name the end device by its SAS address.
		addr, ok := w.attr(endSAS, "sas_address")
		if !ok {
			return ""
		}
		w.prepend(fmt.Sprintf("sas-%s-%s", addr, lun(dir)))
		return dir
	}
	phy, ok := w.attr(endSAS, "phy_identifier")
	if !ok {
		return ""
	}
	// The port hangs off the HBA's host or an expander.
	parent := w.parent(port)
	if parent == "" {
		return ""
	}
	if exp := w.lookup("sas_device", sysname(parent), parent); exp != "" {
		addr, ok := w.attr(exp, "sas_address")
		if !ok {
			return ""
		}
		w.prepend(fmt.Sprintf("sas-exp%s-phy%s-%s", addr, phy, lun(dir)))
		return dir
	}
	w.prepend(fmt.Sprintf("sas-phy%s-%s", phy, lun(dir)))
	return dir
}

// hbtl parses a scsi_device name "H:B:T:L".
func hbtl(name string) (h, b, t, l int, ok bool) {
	f := strings.Split(name, ":")
	if len(f) != 4 {
		return 0, 0, 0, 0, false
	}
	var v [4]int
	for i, s := range f {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			return 0, 0, 0, 0, false
		}
		v[i] = n
	}
	return v[0], v[1], v[2], v[3], true
}

func (w *walker) ata(dir string) string {
	_, bus, target, _, ok := hbtl(sysname(dir))
	if !ok {
		return ""
	}
	host := w.parentWith(dir, "scsi", "scsi_host")
	if host == "" {
		return ""
	}
	port := w.parent(host) // ataN
	if port == "" {
		return ""
	}
	ap := w.lookup("ata_port", sysname(port), port)
	if ap == "" {
		return ""
	}
	no, ok := w.attr(ap, "port_no")
	if !ok {
		return ""
	}
	if bus != 0 {
		// Behind a port multiplier the bus is the PMP port.
		w.prepend(fmt.Sprintf("ata-%s.%d.0", no, bus))
	} else {
		// Master and slave differ by target.
		w.prepend(fmt.Sprintf("ata-%s.%d", no, target))
	}
	w.compat = append([]string{"ata-" + no}, w.compat...)
	w.hasCompat = true
	return dir
}

// scsiDefault names other SCSI devices by H:B:T:L with the host number
// rebased: udev subtracts the lowest hostN number found in the directory
// that holds the host (udev itself calls this racy; it is what the links
// are named after).
func (w *walker) scsiDefault(dir string) string {
	host := w.parentWith(dir, "scsi", "scsi_host")
	if host == "" {
		return ""
	}
	h, b, t, l, ok := hbtl(sysname(dir))
	if !ok {
		return ""
	}
	ents, err := os.ReadDir(w.t.abs(path.Dir(host), ""))
	if err != nil {
		return ""
	}
	base := -1
	for _, e := range ents {
		if !e.IsDir() && e.Type()&os.ModeSymlink == 0 {
			continue
		}
		n, ok := strings.CutPrefix(e.Name(), "host")
		if !ok {
			continue
		}
		i, err := strconv.ParseUint(n, 10, 31)
		if err != nil {
			continue
		}
		if base == -1 || int(i) < base {
			base = int(i)
		}
	}
	if base == -1 {
		return host
	}
	w.prepend(fmt.Sprintf("scsi-%d:%d:%d:%d", h-base, b, t, l))
	return host
}

func (w *walker) usb(dir string) string {
	switch w.devtype(dir) {
	case "usb_interface", "usb_device":
	default:
		return dir
	}
	_, port, ok := strings.Cut(sysname(dir), "-")
	if !ok {
		return dir
	}
	// The bus number can change across boots; udev always writes 0.
	w.prepend("usb-0:" + port)
	return w.skip(dir, "usb")
}

func (w *walker) nvme(dir, sub string) string {
	nsid, ok := w.attr(w.dev, "nsid")
	if !ok {
		return dir
	}
	w.prepend("nvme-" + nsid)
	if sub == "nvme-subsystem" {
		// Native multipath: the namespace hangs off
		// devices/virtual/nvme-subsystem/nvme-subsysN; continue from
		// controller nvmeN (the name's nvme%d prefix) on its PCI device.
		name := path.Base(w.dev)
		ctrl := "nvme" + leadingDigits(strings.TrimPrefix(name, "nvme"))
		dir = w.lookup("nvme", ctrl, "")
		if dir == "" {
			w.unsupported = fmt.Sprintf("nvme controller %s of %s not found", ctrl, name)
			return ""
		}
	}
	w.parentBus = true
	w.transport = true
	return w.skip(dir, "nvme")
}

// sysname returns the device name of dir as udev sees it.
func sysname(dir string) string { return strings.ReplaceAll(path.Base(dir), "!", "/") }

// sysnum returns the trailing digits of name.
func sysnum(name string) string {
	i := len(name)
	for i > 0 && name[i-1] >= '0' && name[i-1] <= '9' {
		i--
	}
	return name[i:]
}

func leadingDigits(s string) string {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return s[:i]
}
