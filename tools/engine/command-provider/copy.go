package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/pkg/sftp"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
)

// copyToRemote copies the source over SFTP, as pulumi-command 1.2.1 documents CopyToRemote:
// missing parents of remotePath are created; a directory lands in remotePath under its own name
// (its contents do, when its path ends in "/"); a file lands inside an existing directory, or at
// remotePath, overwriting a file there.
func copyToRemote(ctx context.Context, inputs resource.PropertyMap) error {
	remotePath, _ := stringOf(inputs, "remotePath")
	source := plain(inputs["source"])
	client, conn, closeAll, err := connect(ctx, inputs)
	if err != nil {
		return err
	}
	defer closeAll()
	remote, err := sftp.NewClient(client)
	if err != nil {
		return fmt.Errorf("sftp to %s: %w", conn.target.address(), err)
	}
	defer remote.Close()

	if err := remote.MkdirAll(path.Dir(remotePath)); err != nil {
		return fmt.Errorf("failed to create remote directory %s: %w", path.Dir(remotePath), err)
	}
	switch {
	case source.IsAsset() && source.AssetValue().IsText():
		return writeRemote(remote, remotePath, []byte(source.AssetValue().Text))
	case source.IsAsset():
		return copyPath(remote, source.AssetValue().Path, remotePath)
	case source.IsArchive():
		return copyPath(remote, source.ArchiveValue().Path, remotePath)
	}
	return errors.New("source: expected a FileAsset, a StringAsset or a FileArchive")
}

func copyPath(remote *sftp.Client, local, dest string) error {
	info, err := os.Stat(local)
	if err != nil {
		return err
	}
	existing, err := remoteStat(remote, dest)
	if err != nil {
		return err
	}
	if !info.IsDir() {
		if existing != nil && existing.IsDir() {
			dest = path.Join(dest, filepath.Base(local))
		}
		return copyFile(remote, local, dest)
	}
	if existing != nil && !existing.IsDir() {
		return fmt.Errorf("remote path %s exists but is not a directory", dest)
	}
	if err := remote.MkdirAll(dest); err != nil {
		return fmt.Errorf("failed to create remote directory %s: %w", dest, err)
	}
	if !strings.HasSuffix(local, "/") {
		dest = path.Join(dest, filepath.Base(local))
	}
	return filepath.WalkDir(local, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(local, p)
		if err != nil {
			return err
		}
		target := path.Join(dest, filepath.ToSlash(rel))
		if !d.IsDir() {
			return copyFile(remote, p, target)
		}
		found, err := remoteStat(remote, target)
		switch {
		case err != nil:
			return err
		case found == nil:
			if err := remote.Mkdir(target); err != nil {
				return fmt.Errorf("failed to create remote directory %s: %w", target, err)
			}
		case !found.IsDir():
			return fmt.Errorf("remote path %s exists but is not a directory", target)
		}
		return nil
	})
}

// remoteStat is nil, nil when the path does not exist.
func remoteStat(remote *sftp.Client, p string) (fs.FileInfo, error) {
	info, err := remote.Stat(p)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("failed to stat remote path %s: %w", p, err)
	}
	if err != nil {
		return nil, nil
	}
	return info, nil
}

func copyFile(remote *sftp.Client, local, dest string) error {
	data, err := os.ReadFile(local)
	if err != nil {
		return err
	}
	return writeRemote(remote, dest, data)
}

func writeRemote(remote *sftp.Client, dest string, data []byte) error {
	if found, err := remoteStat(remote, dest); err != nil {
		return err
	} else if found != nil && found.IsDir() {
		return fmt.Errorf("remote path %s is a directory; a file cannot replace it", dest)
	}
	f, err := remote.Create(dest)
	if err != nil {
		return fmt.Errorf("failed to create remote file %s: %w", dest, err)
	}
	if _, err := f.Write(data); err != nil {
		_ = f.Close()
		return fmt.Errorf("failed to write remote file %s: %w", dest, err)
	}
	return f.Close()
}
