package testenv

import (
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// Options shape the test bed. The zero value is what API tests want.
type Options struct {
	// FullAdmission turns the ServiceAccount admission plugin back on, which
	// envtest disables because nothing creates default ServiceAccounts
	// without kube-controller-manager. Use it with StartControllerManager.
	FullAdmission bool
	// APIServerFlags are extra kube-apiserver flags, name without dashes to
	// values, e.g. {"disable-admission-plugins": {"TaintNodesByCondition"}}.
	APIServerFlags map[string][]string
	// CRDDirs default to charts/nodesmith/crds.
	CRDDirs []string
	// AttachOutput streams the apiserver's and etcd's logs to the test output.
	AttachOutput bool
}

// Env is a running kube-apiserver + etcd with Nodesmith's CRDs installed.
type Env struct {
	// Config reaches the apiserver as a system:masters user.
	Config *rest.Config
	// Client uses Scheme and strict field validation, so a typo in a test
	// object fails loudly instead of being dropped.
	Client client.Client
	Scheme *runtime.Scheme
	// KubeconfigPath is a kubeconfig file for kubectl, kube-scheduler,
	// kube-controller-manager, KWOK or the controller process.
	KubeconfigPath string
	// AssetsDir holds the control-plane binaries.
	AssetsDir string
	// Dir is a scratch folder removed by Stop (kubeconfig, process logs).
	Dir string

	env *envtest.Environment
	// certDir holds kube-apiserver's certificates and keys. The Env owns it
	// (envtest would make and forget a new one at each start), so a
	// restarted apiserver serves the same certificates, trusts the same
	// client CA and verifies the same service-account tokens: every
	// kubeconfig handed out keeps working across RestartAPIServer.
	certDir string
	apiLog  *os.File
	// front is the endpoint every client is given (see front).
	front *front
	mu    sync.Mutex
	procs []*Process
}

// Start brings up etcd and kube-apiserver and installs the CRDs. It takes
// about 5 s; call it once per test binary (see Run).
func Start(opts Options) (*Env, error) {
	assets, err := AssetsDir()
	if err != nil {
		return nil, err
	}
	scheme, err := NewScheme()
	if err != nil {
		return nil, fmt.Errorf("building the scheme: %w", err)
	}
	crdDirs := opts.CRDDirs
	if len(crdDirs) == 0 {
		crdDirs = []string{CRDDir()}
	}
	te := &envtest.Environment{
		BinaryAssetsDirectory:    assets,
		CRDDirectoryPaths:        crdDirs,
		ErrorIfCRDPathMissing:    true,
		Scheme:                   scheme,
		AttachControlPlaneOutput: opts.AttachOutput,
		ControlPlaneStartTimeout: 2 * time.Minute,
		ControlPlaneStopTimeout:  time.Minute,
	}
	certDir, err := os.MkdirTemp("", "nodesmith-apiserver-")
	if err != nil {
		return nil, fmt.Errorf("creating the apiserver's certificate folder: %w", err)
	}
	te.ControlPlane.APIServer = &envtest.APIServer{Path: filepath.Join(assets, "kube-apiserver"), CertDir: certDir}
	var apiLog *os.File
	if !opts.AttachOutput {
		// Its output, for reading why a stop or start took long.
		if apiLog, err = os.Create(filepath.Join(certDir, apiserverLog)); err != nil {
			_ = os.RemoveAll(certDir)
			return nil, fmt.Errorf("creating the apiserver's log: %w", err)
		}
		te.ControlPlane.APIServer.Out, te.ControlPlane.APIServer.Err = apiLog, apiLog
	}
	te.ControlPlane.Etcd = &envtest.Etcd{Path: filepath.Join(assets, "etcd")}
	args := te.ControlPlane.APIServer.Configure()
	if opts.FullAdmission {
		args.Disable("disable-admission-plugins")
	}
	for name, values := range opts.APIServerFlags {
		args.Set(name, values...)
	}

	cfg, err := te.Start()
	if err != nil {
		_ = te.Stop()
		if apiLog != nil {
			_ = apiLog.Close()
		}
		_ = os.RemoveAll(certDir)
		return nil, fmt.Errorf("starting kube-apiserver and etcd from %s: %w", assets, err)
	}
	e := &Env{Config: cfg, Scheme: scheme, AssetsDir: assets, env: te, certDir: certDir, apiLog: apiLog}
	if err := e.startFront(); err != nil {
		_ = e.Stop()
		return nil, err
	}
	if err := e.finish(); err != nil {
		_ = e.Stop()
		return nil, err
	}
	return e, nil
}

func (e *Env) finish() error {
	dir, err := os.MkdirTemp("", "nodesmith-testenv-")
	if err != nil {
		return fmt.Errorf("creating the scratch folder: %w", err)
	}
	e.Dir = dir
	e.KubeconfigPath = filepath.Join(dir, "kubeconfig")
	kubeconfig, err := pointAt(e.env.KubeConfig, e.Config.Host)
	if err != nil {
		return err
	}
	if err := os.WriteFile(e.KubeconfigPath, kubeconfig, 0o600); err != nil {
		return fmt.Errorf("writing the kubeconfig: %w", err)
	}
	c, err := client.New(e.Config, client.Options{Scheme: e.Scheme, FieldValidation: "Strict"})
	if err != nil {
		return fmt.Errorf("building the client: %w", err)
	}
	e.Client = c
	return nil
}

// startFront puts the front before kube-apiserver and points Config at it
// (finish writes the kubeconfig from Config.Host).
func (e *Env) startFront() error {
	s := e.env.ControlPlane.APIServer.SecureServing
	backend := net.JoinHostPort(s.ListenAddr.Address, s.ListenAddr.Port)
	probe, err := readyzProbe(e.Config, backend)
	if err != nil {
		return err
	}
	f, err := startFront(backend, probe)
	if err != nil {
		return err
	}
	if !f.ready.Load() {
		f.close()
		return fmt.Errorf("kube-apiserver at %s started but its /readyz does not pass", backend)
	}
	e.front = f
	e.Config.Host = "https://" + f.Addr()
	return nil
}

// pointAt rewrites every cluster of a kubeconfig to server host.
func pointAt(kubeconfig []byte, host string) ([]byte, error) {
	cfg, err := clientcmd.Load(kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("reading envtest's kubeconfig: %w", err)
	}
	for _, c := range cfg.Clusters {
		c.Server = host
	}
	out, err := clientcmd.Write(*cfg)
	if err != nil {
		return nil, fmt.Errorf("writing the kubeconfig: %w", err)
	}
	return out, nil
}

// FrontRefusals is how many connections the API front has closed because
// kube-apiserver's /readyz did not pass (see front).
func (e *Env) FrontRefusals() int64 { return e.front.refused.Load() }

// Stop ends every process started through Env, then the apiserver and etcd,
// and removes the scratch folder.
func (e *Env) Stop() error {
	e.mu.Lock()
	procs := e.procs
	e.procs = nil
	e.mu.Unlock()
	var errs []error
	for i := len(procs) - 1; i >= 0; i-- {
		if err := procs[i].Stop(); err != nil {
			errs = append(errs, err)
		}
	}
	if err := e.env.Stop(); err != nil {
		errs = append(errs, fmt.Errorf("stopping kube-apiserver and etcd: %w", err))
	}
	if e.front != nil {
		e.front.close()
	}
	if e.apiLog != nil {
		_ = e.apiLog.Close()
	}
	if e.certDir != "" {
		if err := os.RemoveAll(e.certDir); err != nil {
			errs = append(errs, err)
		}
	}
	if e.Dir != "" {
		if err := os.RemoveAll(e.Dir); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Run is the body of a TestMain: it starts the test bed, hands it to setup,
// runs the tests and stops it. A test bed that cannot start fails the
// binary (exit code 1) with the reason; it never skips.
func Run(m *testing.M, opts Options, setup func(*Env) error) int {
	if !flag.Parsed() {
		flag.Parse() // testing.Verbose needs the flags; m.Run would parse them anyway
	}
	start := time.Now()
	e, err := Start(opts)
	if err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: test bed: %v\n", err)
		return 1
	}
	if testing.Verbose() {
		fmt.Fprintf(os.Stderr, "test bed up in %s (kubeconfig %s)\n", time.Since(start).Round(time.Millisecond), e.KubeconfigPath)
	}
	code := 1
	if err := setup(e); err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: test bed setup: %v\n", err)
	} else {
		code = m.Run()
	}
	stop := time.Now()
	if err := e.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: stopping the test bed: %v\n", err)
		return 1
	}
	if testing.Verbose() {
		fmt.Fprintf(os.Stderr, "test bed down in %s\n", time.Since(stop).Round(time.Millisecond))
	}
	return code
}
