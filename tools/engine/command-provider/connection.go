package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
)

// pulumi-command 1.2.1's connection defaults, for the machine and for its proxy alike.
const (
	defaultUser           = "root"
	defaultPort           = 22
	defaultDialErrorLimit = 10 // -1: unlimited
	defaultPerDialTimeout = 15 // seconds; 0: no limit
)

// As pulumi-sdk's retry.Until waits between dials: 100 ms, 1.5 times longer each time, at most 5 s.
const (
	firstRetryDelay = 100 * time.Millisecond
	retryBackoff    = 1.5
	maxRetryDelay   = 5 * time.Second
)

// endpoint is one SSH server to reach: the machine, or the bastion in front of it.
type endpoint struct {
	host, user                               string
	port                                     int
	password, privateKey, privateKeyPassword string
	agentSocketPath, hostKey                 string
	dialErrorLimit, perDialTimeout           int
}

type connection struct {
	target endpoint
	proxy  *endpoint
}

// withConnectionDefaults fills in the defaults of a connection (or, with top false, of its
// proxy), keeping it a secret when it is one.
func withConnectionDefaults(v resource.PropertyValue, top bool) resource.PropertyValue {
	if v.IsSecret() {
		return resource.MakeSecret(withConnectionDefaults(v.SecretValue().Element, top))
	}
	if !v.IsObject() {
		return v
	}
	m := v.ObjectValue().Copy()
	setDefault := func(key resource.PropertyKey, value resource.PropertyValue) {
		if cur, ok := m[key]; !ok || cur.IsNull() {
			m[key] = value
		}
	}
	setDefault("user", resource.NewStringProperty(defaultUser))
	setDefault("port", resource.NewNumberProperty(defaultPort))
	setDefault("dialErrorLimit", resource.NewNumberProperty(defaultDialErrorLimit))
	setDefault("perDialTimeout", resource.NewNumberProperty(defaultPerDialTimeout))
	if proxy, ok := m["proxy"]; top && ok && !proxy.IsNull() && !proxy.ContainsUnknowns() {
		m["proxy"] = withConnectionDefaults(proxy, false)
	}
	return resource.NewObjectProperty(m)
}

func parseEndpoint(v resource.PropertyValue) (endpoint, error) {
	v = plain(v)
	if !v.IsObject() {
		return endpoint{}, errors.New("connection: expected an object")
	}
	m := v.ObjectValue()
	e := endpoint{}
	var ok bool
	if e.host, ok = stringOf(m, "host"); !ok || e.host == "" {
		return e, errors.New("connection: missing required property 'host'")
	}
	e.user, _ = stringOf(m, "user")
	if e.user == "" {
		e.user = defaultUser
	}
	e.password, _ = stringOf(m, "password")
	e.privateKey, _ = stringOf(m, "privateKey")
	e.privateKeyPassword, _ = stringOf(m, "privateKeyPassword")
	e.agentSocketPath, _ = stringOf(m, "agentSocketPath")
	e.hostKey, _ = stringOf(m, "hostKey")
	var err error
	if e.port, err = intOf(m, "port", defaultPort); err != nil {
		return e, err
	}
	if e.dialErrorLimit, err = intOf(m, "dialErrorLimit", defaultDialErrorLimit); err != nil {
		return e, err
	}
	if e.perDialTimeout, err = intOf(m, "perDialTimeout", defaultPerDialTimeout); err != nil {
		return e, err
	}
	return e, nil
}

func parseConnection(props resource.PropertyMap) (connection, error) {
	target, err := parseEndpoint(props["connection"])
	if err != nil {
		return connection{}, err
	}
	c := connection{target: target}
	if proxy, ok := plain(props["connection"]).ObjectValue()["proxy"]; ok && !proxy.IsNull() {
		p, err := parseEndpoint(proxy)
		if err != nil {
			return c, fmt.Errorf("proxy %w", err)
		}
		c.proxy = &p
	}
	return c, nil
}

func (e endpoint) address() string { return net.JoinHostPort(e.host, strconv.Itoa(e.port)) }

// clientConfig authenticates with the key, the password and the agent, in that order. With a
// pinned hostKey, only that key is accepted and only its type is offered (HostKeyAlgorithms), as
// pulumi-command does: an ssh-rsa key therefore asks for SHA-1 signatures, which OpenSSH 8.8 and
// later refuse. Without one, any host key is accepted.
func (e endpoint) clientConfig() (*ssh.ClientConfig, error) {
	cfg := &ssh.ClientConfig{User: e.user, HostKeyCallback: ssh.InsecureIgnoreHostKey()} //nolint:gosec // documented behaviour
	if e.hostKey != "" {
		key, _, _, _, err := ssh.ParseAuthorizedKey([]byte(e.hostKey))
		if err != nil {
			return nil, fmt.Errorf("connection.hostKey of %s: %w", e.address(), err)
		}
		cfg.HostKeyCallback = ssh.FixedHostKey(key)
		cfg.HostKeyAlgorithms = []string{key.Type()}
	}
	if e.privateKey != "" {
		var signer ssh.Signer
		var err error
		if e.privateKeyPassword != "" {
			signer, err = ssh.ParsePrivateKeyWithPassphrase([]byte(e.privateKey), []byte(e.privateKeyPassword))
		} else {
			signer, err = ssh.ParsePrivateKey([]byte(e.privateKey))
		}
		if err != nil {
			return nil, fmt.Errorf("connection.privateKey: %w", err)
		}
		cfg.Auth = append(cfg.Auth, ssh.PublicKeys(signer))
	}
	if e.password != "" {
		password := e.password
		cfg.Auth = append(cfg.Auth, ssh.Password(password),
			ssh.KeyboardInteractive(func(_, _ string, questions []string, _ []bool) ([]string, error) {
				answers := make([]string, len(questions))
				for i := range answers {
					answers[i] = password
				}
				return answers, nil
			}))
	}
	socket := e.agentSocketPath
	if socket == "" {
		socket = os.Getenv("SSH_AUTH_SOCK")
	}
	if socket != "" {
		conn, err := net.Dial("unix", socket)
		if err != nil {
			return nil, fmt.Errorf("ssh agent at %s: %w", socket, err)
		}
		cfg.Auth = append(cfg.Auth, ssh.PublicKeysCallback(agent.NewClient(conn).Signers))
	}
	return cfg, nil
}

// dialer opens the transport to an address: TCP, or a channel through the bastion.
type dialer func(ctx context.Context, address string) (net.Conn, error)

func tcpDialer(ctx context.Context, address string) (net.Conn, error) {
	var d net.Dialer
	return d.DialContext(ctx, "tcp", address)
}

// dialOnce is one dial attempt: transport and SSH handshake, both within perDialTimeout.
func (e endpoint) dialOnce(ctx context.Context, dial dialer, cfg *ssh.ClientConfig) (*ssh.Client, error) {
	attempt := ctx
	if e.perDialTimeout > 0 {
		var cancel context.CancelFunc
		attempt, cancel = context.WithTimeout(ctx, time.Duration(e.perDialTimeout)*time.Second)
		defer cancel()
	}
	conn, err := dial(attempt, e.address())
	if err != nil {
		return nil, err
	}
	// A channel through a bastion has no deadlines: closing the transport ends a stuck handshake.
	stop := context.AfterFunc(attempt, func() { _ = conn.Close() })
	c, chans, reqs, err := ssh.NewClientConn(conn, e.address(), cfg)
	if !stop() {
		if c != nil {
			_ = c.Close()
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("ssh: dial %s: no SSH handshake within perDialTimeout (%d s)", e.address(), e.perDialTimeout)
	}
	if err != nil {
		_ = conn.Close()
		return nil, err
	}
	return ssh.NewClient(c, chans, reqs), nil
}

// dial retries failed attempts until more than dialErrorLimit have failed (-1: forever).
func (e endpoint) dial(ctx context.Context, dial dialer) (*ssh.Client, error) {
	cfg, err := e.clientConfig()
	if err != nil {
		return nil, err
	}
	delay := firstRetryDelay
	for failed := 1; ; failed++ {
		client, err := e.dialOnce(ctx, dial, cfg)
		if err == nil {
			return client, nil
		}
		if ctx.Err() != nil {
			return nil, err
		}
		if e.dialErrorLimit >= 0 && failed > e.dialErrorLimit {
			return nil, fmt.Errorf("%w (%s: %d failed dial attempts, dialErrorLimit %d)", err, e.address(), failed, e.dialErrorLimit)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(delay):
		}
		delay = min(time.Duration(float64(delay)*retryBackoff), maxRetryDelay)
	}
}

// open connects to the machine, through its proxy when it has one. The caller closes both.
func (c connection) open(ctx context.Context) (client *ssh.Client, closeAll func(), err error) {
	if c.proxy == nil {
		client, err = c.target.dial(ctx, tcpDialer)
		if err != nil {
			return nil, nil, err
		}
		return client, func() { _ = client.Close() }, nil
	}
	bastion, err := c.proxy.dial(ctx, tcpDialer)
	if err != nil {
		return nil, nil, fmt.Errorf("proxy %s: %w", c.proxy.address(), err)
	}
	through := func(ctx context.Context, address string) (net.Conn, error) {
		return bastion.DialContext(ctx, "tcp", address)
	}
	client, err = c.target.dial(ctx, through)
	if err != nil {
		_ = bastion.Close()
		return nil, nil, fmt.Errorf("%s through proxy %s: %w", c.target.address(), c.proxy.address(), err)
	}
	return client, func() { _ = client.Close(); _ = bastion.Close() }, nil
}

// connect reaches the machine that inputs' connection names. The caller calls closeAll.
func connect(ctx context.Context, inputs resource.PropertyMap) (client *ssh.Client, conn connection, closeAll func(), err error) {
	if conn, err = parseConnection(inputs); err != nil {
		return nil, conn, nil, err
	}
	client, closeAll, err = conn.open(ctx)
	return client, conn, closeAll, err
}
