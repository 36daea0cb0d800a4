package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/pulumi/pulumi/sdk/v3/go/common/diag"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
)

// What `logging` echoes while the command runs; stdout and stderr are captured whatever it says.
var loggingModes = map[string]struct{ stdout, stderr bool }{
	"stdout":          {true, false},
	"stderr":          {false, true},
	"stdoutAndStderr": {true, true},
	"none":            {false, false},
}

// runCommand runs the inputs' create, update or delete line on the machine. previous holds the
// outputs of the last run, passed as PULUMI_COMMAND_STDOUT/STDERR when addPreviousOutputInEnv
// is on (sshd sets them only where it accepts them, AcceptEnv). outputs, when not nil, gets
// stdout and stderr, each without its final newline.
func (p *commandProvider) runCommand(
	ctx context.Context, urn resource.URN, inputs resource.PropertyMap, line string,
	previous, outputs resource.PropertyMap,
) error {
	cmd, _ := stringOf(inputs, resource.PropertyKey(line))
	client, _, closeAll, err := connect(ctx, inputs)
	if err != nil {
		return err
	}
	defer closeAll()
	session, err := client.NewSession()
	if err != nil {
		return err
	}
	defer session.Close()

	// Like pulumi-command, a variable that sshd refuses is left out without an error.
	for k, v := range mapOf(inputs, "environment") {
		_ = session.Setenv(k, v)
	}
	if boolOf(inputs, "addPreviousOutputInEnv", true) && previous != nil {
		for key, name := range map[resource.PropertyKey]string{stdoutKey: "PULUMI_COMMAND_STDOUT", stderrKey: "PULUMI_COMMAND_STDERR"} {
			if v, ok := stringOf(previous, key); ok && v != "" {
				_ = session.Setenv(name, v)
			}
		}
	}
	if stdin, ok := stringOf(inputs, "stdin"); ok && stdin != "" {
		session.Stdin = strings.NewReader(stdin)
	}

	mode := loggingModes["stdoutAndStderr"]
	if m, ok := stringOf(inputs, "logging"); ok {
		mode = loggingModes[m]
	}
	echo := &lineEcho{log: func(text string) { _ = p.host.LogStatus(ctx, diag.Info, urn, text) }}
	var stdout, stderr, combined bytes.Buffer
	var combinedMu sync.Mutex
	both := lockedWriter{&combined, &combinedMu}
	session.Stdout = io.MultiWriter(&stdout, both, echo.when(mode.stdout))
	session.Stderr = io.MultiWriter(&stderr, both, echo.when(mode.stderr))

	err = session.Run(cmd)
	echo.flush()
	if err != nil {
		return fmt.Errorf("%w: running %q:\n%s", err, cmd, combined.String())
	}
	if outputs != nil {
		outputs[stdoutKey] = resource.NewStringProperty(strings.TrimSuffix(stdout.String(), "\n"))
		outputs[stderrKey] = resource.NewStringProperty(strings.TrimSuffix(stderr.String(), "\n"))
	}
	return nil
}

type lockedWriter struct {
	w  io.Writer
	mu *sync.Mutex
}

func (l lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

// lineEcho sends whole lines of output to the engine as the resource's status.
type lineEcho struct {
	mu      sync.Mutex
	pending []byte
	log     func(string)
}

func (e *lineEcho) when(on bool) io.Writer {
	if on {
		return e
	}
	return io.Discard
}

func (e *lineEcho) Write(b []byte) (int, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.pending = append(e.pending, b...)
	for {
		i := bytes.IndexByte(e.pending, '\n')
		if i < 0 {
			break
		}
		e.log(string(e.pending[:i]))
		e.pending = e.pending[i+1:]
	}
	return len(b), nil
}

func (e *lineEcho) flush() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.pending) > 0 {
		e.log(string(e.pending))
		e.pending = nil
	}
}
