package remote

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/ckpt/ckpt/remote/backend"
	"github.com/ckpt/ckpt/remote/backend/dir"
	"github.com/ckpt/ckpt/remote/backend/s3"
)

// ErrNoRemote is wrapped when no remote is configured.
var ErrNoRemote = errors.New("no remote configured: set CKPT_REMOTE=s3://BUCKET/PREFIX (or \"remote\" in the store's config.json)")

// Config is where a store's sessions go beyond the machine.
type Config struct {
	URL    string `json:"url"`    // s3://BUCKET/PREFIX or file:///DIR
	Source string `json:"source"` // "CKPT_REMOTE" or the config.json path
	// S3 settings, from the standard AWS environment variables.
	Endpoint  string `json:"endpoint,omitempty"` // AWS_ENDPOINT_URL_S3, else AWS_ENDPOINT_URL; empty: AWS
	Region    string `json:"region,omitempty"`   // AWS_REGION, else AWS_DEFAULT_REGION
	AccessKey string `json:"access_key_id,omitempty"`
	SecretSet bool   `json:"secret_set"` // AWS_SECRET_ACCESS_KEY is set (never shown)
	secret    string
	token     string
}

// LoadConfig reads the remote of store: $CKPT_REMOTE, else the "remote"
// field of STORE/config.json. It fails wrapping ErrNoRemote when neither
// is set.
func LoadConfig(store string) (Config, error) {
	var c Config
	if v := os.Getenv("CKPT_REMOTE"); v != "" {
		c.URL, c.Source = v, "CKPT_REMOTE"
	} else {
		path := filepath.Join(store, "config.json")
		b, err := os.ReadFile(path)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return c, fmt.Errorf("remote: %w", err)
		}
		if err == nil {
			var f struct {
				Remote string `json:"remote"`
			}
			if err := json.Unmarshal(b, &f); err != nil {
				return c, fmt.Errorf("remote: %s: %w", path, err)
			}
			c.URL, c.Source = f.Remote, path
		}
	}
	if c.URL == "" {
		return c, ErrNoRemote
	}
	c.Endpoint = os.Getenv("AWS_ENDPOINT_URL_S3")
	if c.Endpoint == "" {
		c.Endpoint = os.Getenv("AWS_ENDPOINT_URL")
	}
	c.Region = os.Getenv("AWS_REGION")
	if c.Region == "" {
		c.Region = os.Getenv("AWS_DEFAULT_REGION")
	}
	c.AccessKey = os.Getenv("AWS_ACCESS_KEY_ID")
	c.secret = os.Getenv("AWS_SECRET_ACCESS_KEY")
	c.token = os.Getenv("AWS_SESSION_TOKEN")
	c.SecretSet = c.secret != ""
	if _, err := c.parse(); err != nil {
		return c, err
	}
	return c, nil
}

type target struct {
	scheme, bucket, prefix, dir string
}

func (c Config) parse() (target, error) {
	u, err := url.Parse(c.URL)
	if err != nil {
		return target{}, fmt.Errorf("remote: %q is not a URL: %w", c.URL, err)
	}
	switch u.Scheme {
	case "s3":
		if u.Host == "" {
			return target{}, fmt.Errorf("remote: %q names no bucket (s3://BUCKET/PREFIX)", c.URL)
		}
		prefix := strings.Trim(u.Path, "/")
		if prefix != "" && !backend.ValidKey(prefix) {
			return target{}, fmt.Errorf("remote: prefix %q: use letters, digits, '.', '_', '-', '=' and '/'", prefix)
		}
		return target{scheme: "s3", bucket: u.Host, prefix: prefix}, nil
	case "file":
		p := u.Path
		if len(p) >= 3 && p[0] == '/' && p[2] == ':' && filepath.Separator == '\\' {
			p = p[1:] // file:///C:/dir on Windows
		}
		if u.Host != "" && u.Host != "localhost" || p == "" || !filepath.IsAbs(filepath.FromSlash(p)) {
			return target{}, fmt.Errorf("remote: %q: a file remote needs an absolute path (file:///DIR)", c.URL)
		}
		return target{scheme: "file", dir: filepath.FromSlash(p)}, nil
	}
	return target{}, fmt.Errorf("remote: %q: the remote must be s3://BUCKET/PREFIX or file:///DIR", c.URL)
}

// Backend opens the configured backend. It makes no request.
func (c Config) Backend() (backend.Backend, error) {
	t, err := c.parse()
	if err != nil {
		return nil, err
	}
	if t.scheme == "file" {
		return dir.New(t.dir)
	}
	if c.AccessKey == "" || c.secret == "" {
		return nil, errors.New("remote: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY for an s3 remote")
	}
	return s3.New(s3.Config{Endpoint: c.Endpoint, Bucket: t.bucket, Prefix: t.prefix,
		AccessKey: c.AccessKey, SecretKey: c.secret, Token: c.token, Region: c.Region})
}
