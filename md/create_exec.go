package md

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"github.com/go-mdraid/mdraid/md/mapfile"
	"github.com/go-mdraid/mdraid/sysfs"
)

// This file gathers the facts of a create and carries out its plan: the
// devices claimed exclusively and checked blank again on the descriptor
// that writes them, the superblocks written, then the array started the
// way assembly starts one, with its /dev/md/NAME link and map entry.

// CreateResult is what Create did.
type CreateResult struct {
	Plan *CreatePlan `json:"plan"`
	// Array is the kernel name ("md127"); Path the path it is known by
	// (/dev/md/NAME when it has a name, else /dev/mdN).
	Array string `json:"array"`
	Path  string `json:"path"`
	// Writes lists every change made, in order.
	Writes []string `json:"writes"`
}

// CreateError is a create that failed after it began to change the
// system. Written lists the devices whose superblocks were written; State
// says what was left behind. It unwraps to the cause.
type CreateError struct {
	Array   string
	Written []string
	State   string
	Err     error
}

// Error names the cause and what was left behind.
func (e *CreateError) Error() string {
	return fmt.Sprintf("md: create %s failed: %v; %s", e.Array, e.Err, e.State)
}

// Unwrap returns the cause.
func (e *CreateError) Unwrap() error { return e.Err }

// createTarget is the md device a create makes: kernel name, md number
// and the /dev/md/ link name ("" for none).
type createTarget struct {
	array string
	minor int
	link  string
	// stale is the target text of a /dev/md/NAME link left behind by an
	// array that is gone (without udev nothing removes it), which the
	// create replaces; empty when there is none.
	stale string
}

// target resolves req.Array to the md device to make, or says why it is
// taken.
func (m *Manager) target(array string, entries []mapfile.Entry) (createTarget, string) {
	exists := func(n int) bool {
		_, err := os.Stat(m.fs.Path("block", "md"+strconv.Itoa(n)))
		return err == nil
	}
	var t createTarget
	var link string
	switch {
	case strings.HasPrefix(array, "/dev/md/"):
		link = strings.TrimPrefix(array, "/dev/md/")
	case strings.HasPrefix(array, "/dev/md") && preferredNumber(array) >= 0:
		n := preferredNumber(array)
		if exists(n) {
			return t, fmt.Sprintf("md%d exists", n)
		}
		t.array, t.minor = "md"+strconv.Itoa(n), n
		return t, ""
	case strings.HasPrefix(array, "/"):
		return t, fmt.Sprintf("%s is not an md device path (/dev/md/NAME or /dev/mdN)", array)
	default:
		link = array
	}
	safe, err := linkName(link)
	if err != nil || safe != link || strings.Contains(link, "/") || link == "" {
		return t, fmt.Sprintf("%q is not a name an array can have", link)
	}
	lp := filepath.Join(m.devRoot, "md", link)
	if _, err := os.Lstat(lp); err == nil {
		// A link to an md device that is no array any more is stale.
		dest, rerr := os.Readlink(lp)
		n := preferredNumber(dest)
		if rerr != nil || n < 0 || !strings.HasPrefix(dest, "/dev/md") {
			return t, lp + " exists"
		}
		if ok, err := m.alive("md" + strconv.Itoa(n)); ok || err != nil {
			return t, fmt.Sprintf("%s exists: it is md%d's", lp, n)
		}
		t.stale = dest
	} else if !errors.Is(err, fs.ErrNotExist) {
		return t, fmt.Sprintf("cannot tell whether %s exists: %v", lp, err)
	}
	for _, e := range entries {
		if e.Path == "/dev/md/"+link {
			if ok, err := m.alive(e.Dev); ok || err != nil {
				return t, fmt.Sprintf("the map file gives /dev/md/%s to %s", link, e.Dev)
			}
		}
	}
	n := chooseNumber(link, true, exists)
	if n < 0 {
		return t, "every md number is in use"
	}
	t.array, t.minor, t.link = "md"+strconv.Itoa(n), n, link
	return t, ""
}

// createDeviceFacts turns what candidateFacts found into a CreateDevice:
// everything that holds the device is named in InUse, a fact that could
// not be established in Unknown.
func createDeviceFacts(c *Candidate) CreateDevice {
	d := CreateDevice{Path: c.Path, SizeBytes: c.SizeBytes, LogicalBlockSize: uint32(c.LogicalBlockSize), DevNum: c.dev}
	var use []string
	if !c.BlockDevice && !c.Image {
		use = append(use, "not a block device")
	}
	use = append(use, c.memberships()...)
	use = append(use, c.uses("")...)
	if len(c.Partitions) > 0 {
		use = append(use, "has kernel partitions "+strings.Join(c.Partitions, ", "))
	}
	d.InUse = strings.Join(use, "; ")
	d.Unknown = c.Error
	if len(c.Findings) > 0 {
		d.Blank = c.Findings[0]
	}
	return d
}

// gatherCreate gathers the facts of req: each device's, the target md
// device's, fresh UUIDs and the time.
func (m *Manager) gatherCreate(req CreateRequest, entries []mapfile.Entry) (CreateRequest, CreateFacts, createTarget, map[string]*Candidate) {
	f := CreateFacts{Now: m.Now(), ArrayUUID: uuid.New()}
	cands := map[string]*Candidate{}
	for _, p := range req.Devices {
		f.DeviceUUIDs = append(f.DeviceUUIDs, uuid.New())
		if p == Missing {
			f.Devices = append(f.Devices, CreateDevice{Path: p, Missing: true})
			continue
		}
		c := m.candidateFacts(p, req.AllowImageFile)
		cands[p] = c
		d := createDeviceFacts(c)
		// Two paths to one disk (a by-id link and its node) are one
		// device named twice.
		for q, o := range cands {
			if q != p && !c.dev.IsZero() && o.dev == c.dev {
				d.InUse = strings.TrimPrefix(d.InUse+"; the same device as "+q, "; ")
			}
		}
		f.Devices = append(f.Devices, d)
	}
	t, busy := m.target(req.Array, entries)
	f.ArrayInUse = busy
	f.MDMinor = uint32(t.minor)
	switch req.Homehost {
	case "":
		req.Homehost = m.homeHost
	case "<none>":
		req.Homehost = ""
	}
	if req.Name == "" && t.link != "" {
		req.Name = t.link
	}
	return req, f, t, cands
}

// PlanCreate gathers the facts of req and plans it (see the function
// PlanCreate): the dry run of Create. An empty req.Homehost is the
// Manager's (Config.HomeHost); "<none>" writes none. It writes nothing.
func (m *Manager) PlanCreate(ctx context.Context, req CreateRequest) (*CreatePlan, error) {
	l, entries, err := m.lockMapFor(ctx)
	if err != nil {
		return nil, err
	}
	defer l.Unlock()
	req, f, _, _ := m.gatherCreate(req, entries)
	return PlanCreate(req, f)
}

// lockMapFor takes the map lock, which a create holds from its facts to
// its map entry, and reads the map's entries (none when there is no map).
func (m *Manager) lockMapFor(ctx context.Context) (*mapfile.Lock, []mapfile.Entry, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	l, err := mapfile.Map{Dir: m.mapDir}.Lock()
	if err != nil {
		return nil, nil, fmt.Errorf("md: %w", err)
	}
	entries, err := l.Read()
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		l.Unlock()
		return nil, nil, fmt.Errorf("md: %w", err)
	}
	return l, entries, nil
}

// Create creates the array req asks for and starts it: under the map
// lock it gathers the facts and plans (a refusal writes nothing), claims
// every device with an exclusive open and checks through that descriptor
// that it is still the planned, blank device (any failure releases every
// claim: nothing written), writes each device's superblock (and bitmap,
// after zeroing the bitmap and bad-block log areas), then creates the md
// device, binds the members and runs it, and makes /dev/md/NAME and the
// map entry as assembly does.
//
// A failure after the first write is a *CreateError naming the devices
// written; when the array could not be started it is stopped again, and
// the written superblocks stay (mdctl zero-superblock removes them).
func (m *Manager) Create(ctx context.Context, req CreateRequest) (*CreateResult, error) {
	l, entries, err := m.lockMapFor(ctx)
	if err != nil {
		return nil, err
	}
	defer l.Unlock()
	req, f, t, cands := m.gatherCreate(req, entries)
	p, err := PlanCreate(req, f)
	if err != nil {
		return nil, err
	}
	res := &CreateResult{Plan: p, Array: t.array, Path: "/dev/" + t.array}

	// Claim every device; one refusal releases them all.
	maxLBS := int64(req.LogicalBlockSize)
	for _, d := range f.Devices {
		maxLBS = max(maxLBS, int64(d.LogicalBlockSize))
	}
	var claims []claimedDevice
	release := func() {
		for _, c := range claims {
			if c != nil {
				c.Close()
			}
		}
	}
	for _, mem := range p.Members {
		c := cands[mem.Path]
		w := deviceWrite{Path: mem.Path, Dev: c.dev, Size: c.SizeBytes, LBS: c.LogicalBlockSize, MaxLBS: maxLBS,
			Regions: createRegions(mem)}
		cl, err := m.ops.k.ClaimDevice(w)
		if err != nil {
			release()
			return nil, refuse("create", req.Array, mem.Path, err)
		}
		claims = append(claims, cl)
	}
	// Write them.
	var written []string
	fail := func(err error, state string) error {
		return &CreateError{Array: req.Array, Written: written, State: state, Err: err}
	}
	for _, i := range writeOrder(p.Members) {
		mem := p.Members[i]
		cl := claims[i]
		claims[i] = nil
		err := cl.Write()
		if err != nil {
			release()
			var nw *notWrittenError
			if errors.As(err, &nw) {
				if len(written) == 0 {
					// The claim's last check refused it before any
					// byte: nothing was written anywhere.
					return nil, refuse("create", req.Array, mem.Path, fmt.Errorf("%s: %w; nothing was written to any device", mem.Path, err))
				}
				return nil, fail(fmt.Errorf("writing %s: %w", mem.Path, err),
					fmt.Sprintf("superblocks written on %s; %s was not written; no array was started", orNone(written), mem.Path))
			}
			return nil, fail(fmt.Errorf("writing %s: %w", mem.Path, err),
				fmt.Sprintf("superblocks written on %s, %s possibly part-written; no array was started", orNone(written), mem.Path))
		}
		written = append(written, mem.Path)
		res.Writes = append(res.Writes, "superblock "+mem.Path)
	}

	// Start it the way assembly does.
	left := fmt.Sprintf("superblocks written on %s; the array was stopped again", strings.Join(written, ", "))
	if err := m.asm.NewArray(t.array); err != nil {
		return nil, fail(fmt.Errorf("creating %s: %w", t.array, err), fmt.Sprintf("superblocks written on %s; no array was started", strings.Join(written, ", ")))
	}
	res.Writes = append(res.Writes, "new_array "+t.array)
	undo := func(err error) error {
		serr := m.asm.StopArray(t.array)
		if serr == nil {
			res.Writes = append(res.Writes, "STOP_ARRAY "+t.array)
			return fail(err, left+" (writes: "+strings.Join(res.Writes, ", ")+")")
		}
		res.Writes = append(res.Writes, "STOP_ARRAY "+t.array+" failed: "+serr.Error())
		return fail(err, fmt.Sprintf("superblocks written on %s; %s could not be stopped (%v) (writes: %s)", strings.Join(written, ", "), t.array, serr, strings.Join(res.Writes, ", ")))
	}
	node := filepath.Join(m.devRoot, t.array)
	if err := m.asm.MakeNode(node, sysfs.DevNum{Major: 9, Minor: uint32(t.minor)}); err != nil {
		return nil, undo(fmt.Errorf("making the node %s: %w", node, err))
	}
	sb := p.Members[0].Superblock
	major, minor := arrayInfoVersion(sb)
	if err := m.asm.SetArrayInfo(t.array, major, minor); err != nil {
		return nil, undo(fmt.Errorf("SET_ARRAY_INFO on %s: %w", t.array, err))
	}
	res.Writes = append(res.Writes, fmt.Sprintf("SET_ARRAY_INFO %d.%d", major, minor))
	for _, mem := range p.Members {
		c := cands[mem.Path]
		if err := m.asm.AddDisk(t.array, c.dev); err != nil {
			return nil, undo(fmt.Errorf("adding %s to %s: %w", mem.Path, t.array, err))
		}
		res.Writes = append(res.Writes, "ADD_NEW_DISK "+c.dev.String())
	}
	if err := m.asm.Start(t.array, false); err != nil {
		return nil, undo(fmt.Errorf("starting %s: %w", t.array, err))
	}
	res.Writes = append(res.Writes, "RUN_ARRAY "+t.array)
	if t.link != "" {
		res.Path = "/dev/md/" + t.link
		if m.makeLinks() {
			lp := filepath.Join(m.devRoot, "md", t.link)
			if t.stale != "" && t.stale != "/dev/"+t.array {
				if ok, err := m.asm.RemoveLink(lp, t.stale); err == nil && ok {
					res.Writes = append(res.Writes, "removed stale "+lp)
				}
			}
			// A stale link that names the new array already is kept.
			if t.stale != "/dev/"+t.array {
				if err := m.asm.MakeLink(lp, "/dev/"+t.array); err != nil {
					return res, fail(fmt.Errorf("making %s: %w", lp, err), t.array+" runs, without its link")
				}
				res.Writes = append(res.Writes, "symlink "+lp)
			}
		}
	}
	e := mapfile.Entry{Dev: t.array, Metadata: metadataText(sb), UUID: mapfile.UUIDText(sb), Path: res.Path}
	if err := l.Update(e); err != nil {
		return res, fail(fmt.Errorf("updating the map file: %w", err), t.array+" runs, without its map entry")
	}
	res.Writes = append(res.Writes, "map "+t.array)
	if err := m.asm.Uevent(t.array); err == nil {
		res.Writes = append(res.Writes, "uevent "+t.array)
	}
	return res, nil
}

// writeOrder is the order in which Create writes the members (indices
// into ms): a member whose superblock names no slot (the spare that
// raid4/5/6 recovery fills) first, then the others in order. The
// superblocks name every slot member but not that spare, so a create
// killed between two writes always leaves a member missing that the
// written superblocks name, and assembly holds such a set back
// (unfinishedCreate) rather than start it degraded.
func writeOrder(ms []CreateMember) []int {
	var first, rest []int
	for i, m := range ms {
		if m.Superblock != nil && slotOf(m.Superblock) < 0 {
			first = append(first, i)
		} else {
			rest = append(rest, i)
		}
	}
	return append(first, rest...)
}

// createRegions is what a member's claim writes: zeros over the bad-block
// log and bitmap areas, the bitmap superblock at the start of its area,
// then the superblock.
func createRegions(mem CreateMember) []region {
	var out []region
	for i, c := range mem.Clear {
		data := make([]byte, c[1])
		for _, w := range mem.Writes {
			if w.What == "bitmap" && w.Offset == c[0] {
				copy(data, w.Data)
			}
		}
		what := "clear"
		if i == len(mem.Clear)-1 && mem.Bitmap != nil {
			what = "bitmap"
		}
		out = append(out, region{What: what, Off: c[0], Data: data})
	}
	for _, w := range mem.Writes {
		if w.What == "superblock" {
			out = append(out, region{What: w.What, Off: w.Offset, Data: w.Data})
		}
	}
	return out
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "no device"
	}
	return strings.Join(s, ", ")
}
