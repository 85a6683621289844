package vmtest

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"
)

// qmpClient speaks QEMU's QMP (JSON lines over a unix socket).
type qmpClient struct {
	mu     sync.Mutex
	conn   net.Conn
	r      *bufio.Reader
	events []qmpMessage
}

type qmpMessage struct {
	Return json.RawMessage `json:"return"`
	Error  *struct {
		Class string `json:"class"`
		Desc  string `json:"desc"`
	} `json:"error"`
	Event string          `json:"event"`
	Data  json.RawMessage `json:"data"`
	QMP   json.RawMessage `json:"QMP"`
}

func dialQMP(ctx context.Context, path string) (*qmpClient, error) {
	var d net.Dialer
	for {
		conn, err := d.DialContext(ctx, "unix", path)
		if err == nil {
			c := &qmpClient{conn: conn, r: bufio.NewReader(conn)}
			if _, err := c.read(); err != nil { // greeting
				conn.Close()
				return nil, err
			}
			if _, err := c.Execute("qmp_capabilities", nil); err != nil {
				conn.Close()
				return nil, err
			}
			return c, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("vmtest: connect to QMP: %w", err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (c *qmpClient) read() (qmpMessage, error) {
	var m qmpMessage
	line, err := c.r.ReadBytes('\n')
	if err != nil {
		return m, fmt.Errorf("vmtest: QMP read: %w", err)
	}
	if err := json.Unmarshal(line, &m); err != nil {
		return m, fmt.Errorf("vmtest: QMP: %w in %q", err, line)
	}
	return m, nil
}

// Execute runs one QMP command and returns its "return" value.
func (c *qmpClient) Execute(cmd string, args any) (json.RawMessage, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	req := map[string]any{"execute": cmd}
	if args != nil {
		req["arguments"] = args
	}
	b, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	c.conn.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := c.conn.Write(append(b, '\n')); err != nil {
		return nil, fmt.Errorf("vmtest: QMP write: %w", err)
	}
	for {
		m, err := c.read()
		if err != nil {
			return nil, err
		}
		switch {
		case m.Event != "":
			c.events = append(c.events, m)
		case m.Error != nil:
			return nil, fmt.Errorf("vmtest: QMP %s: %s: %s", cmd, m.Error.Class, m.Error.Desc)
		default:
			return m.Return, nil
		}
	}
}

// waitEvent waits for an event whose data satisfies match.
func (c *qmpClient) waitEvent(ctx context.Context, name string, match func(json.RawMessage) bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for {
		for i, e := range c.events {
			if e.Event == name && match(e.Data) {
				c.events = append(c.events[:i], c.events[i+1:]...)
				return nil
			}
		}
		dl, ok := ctx.Deadline()
		if !ok {
			dl = time.Now().Add(time.Minute)
		}
		c.conn.SetDeadline(dl)
		m, err := c.read()
		if err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("vmtest: waiting for QMP event %s: %w", name, ctx.Err())
			}
			return err
		}
		if m.Event != "" {
			c.events = append(c.events, m)
		}
	}
}

func (c *qmpClient) close() { c.conn.Close() }

var errNoMonitor = errors.New("vmtest: VM was booted without Config.Monitor")

// QMP runs a QMP command (https://www.qemu.org/docs/master/interop/qemu-qmp-ref.html)
// on a VM booted with Config.Monitor and returns its result.
func (vm *VM) QMP(cmd string, args any) (json.RawMessage, error) {
	if vm.qmp == nil {
		return nil, errNoMonitor
	}
	return vm.qmp.Execute(cmd, args)
}

// AddDisk hot-plugs a raw image at d.Slot while the guest runs (ACPI PCI
// hotplug on pc's bus pci.0). The guest sees a new vdX once it has probed
// the device; wait for it on the guest side.
func (vm *VM) AddDisk(d Disk) error {
	node := fmt.Sprintf("hp%d", d.Slot)
	if _, err := vm.QMP("blockdev-add", map[string]any{
		"driver": "raw", "node-name": node, "discard": "unmap", "detect-zeroes": "unmap",
		"file": map[string]any{"driver": "file", "filename": d.Path, "discard": "unmap"},
	}); err != nil {
		return err
	}
	dev := map[string]any{
		"driver": "virtio-blk-pci", "id": fmt.Sprintf("disk%d", d.Slot), "drive": node,
		"bus": "pci.0", "addr": d.Addr(), "serial": d.serial(),
	}
	if d.LogicalBlockSize != 0 {
		dev["logical_block_size"] = d.LogicalBlockSize
		dev["physical_block_size"] = d.LogicalBlockSize
	}
	_, err := vm.QMP("device_add", dev)
	return err
}

// RemoveDisk hot-unplugs the disk in slot (as if pulled from its port) and
// waits until the guest has released it.
func (vm *VM) RemoveDisk(ctx context.Context, slot int) error {
	id := fmt.Sprintf("disk%d", slot)
	if _, err := vm.QMP("device_del", map[string]any{"id": id}); err != nil {
		return err
	}
	err := vm.qmp.waitEvent(ctx, "DEVICE_DELETED", func(data json.RawMessage) bool {
		var d struct {
			Device string `json:"device"`
		}
		json.Unmarshal(data, &d)
		return d.Device == id
	})
	if err != nil {
		return err
	}
	// Drives attached with -drive go away with their device; blockdev-add ones do not.
	vm.QMP("blockdev-del", map[string]any{"node-name": fmt.Sprintf("hp%d", slot)})
	return nil
}
