package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/mcpflow/mcpflow"
)

// mcpSessionRow is one row of mcp_sessions.
type mcpSessionRow struct {
	ID                 string    `gorm:"column:id;primaryKey"`
	UserID             string    `gorm:"column:user_id"`
	ThreadID           string    `gorm:"column:thread_id"`
	ProtocolVersion    string    `gorm:"column:protocol_version"`
	ClientInfo         string    `gorm:"column:client_info"`
	ClientCapabilities string    `gorm:"column:client_capabilities"`
	LogLevel           string    `gorm:"column:log_level"`
	CreatedAt          time.Time `gorm:"column:created_at;autoCreateTime:false"`
	LastUsedAt         time.Time `gorm:"column:last_used_at"`
}

// TableName implements gorm's Tabler.
func (mcpSessionRow) TableName() string { return "mcp_sessions" }

func jsonObjectOrEmpty(field string, v json.RawMessage) (string, error) {
	if len(v) == 0 {
		return "{}", nil
	}
	if !json.Valid(v) {
		return "", invalid("MCP session %s must be valid JSON", field)
	}
	return string(v), nil
}

// CreateMCPSession stores a new MCP session; CreatedAt and LastUsedAt
// default to now. Its thread must exist (ENotFound otherwise) and its id must
// be new (EConflict otherwise).
func (db *DB) CreateMCPSession(ctx context.Context, s *mcpflow.MCPSession) error {
	if s == nil || s.ID == "" {
		return invalid("MCP session id must not be empty")
	}
	row := mcpSessionRow{ID: s.ID, UserID: s.UserID, ThreadID: s.ThreadID, ProtocolVersion: s.ProtocolVersion,
		CreatedAt: dbTime(s.CreatedAt), LastUsedAt: dbTime(s.LastUsedAt)}
	if s.CreatedAt.IsZero() {
		row.CreatedAt = db.now()
	}
	if s.LastUsedAt.IsZero() {
		row.LastUsedAt = row.CreatedAt
	}
	var err error
	if row.ClientInfo, err = jsonObjectOrEmpty("client_info", s.ClientInfo); err != nil {
		return err
	}
	if row.ClientCapabilities, err = jsonObjectOrEmpty("client_capabilities", s.ClientCapabilities); err != nil {
		return err
	}
	if err := db.gorm.WithContext(ctx).Create(&row).Error; err != nil {
		switch {
		case errors.Is(err, gorm.ErrDuplicatedKey):
			return mcpflow.Errorf(mcpflow.EConflict, "MCP session already exists")
		case errors.Is(err, gorm.ErrForeignKeyViolated):
			return notFound("thread not found")
		}
		return fmt.Errorf("create MCP session: %w", err)
	}
	s.CreatedAt, s.LastUsedAt = row.CreatedAt, row.LastUsedAt
	return nil
}

// GetMCPSession returns the session with that id, or an mcpflow.ENotFound
// error. Ownership is the caller's check.
func (db *DB) GetMCPSession(ctx context.Context, id string) (*mcpflow.MCPSession, error) {
	var row mcpSessionRow
	err := db.gorm.WithContext(ctx).Where("id = ?", id).Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, notFound("MCP session not found")
	}
	if err != nil {
		return nil, fmt.Errorf("get MCP session: %w", err)
	}
	return &mcpflow.MCPSession{ID: row.ID, UserID: row.UserID, ThreadID: row.ThreadID, ProtocolVersion: row.ProtocolVersion,
		ClientInfo: json.RawMessage(row.ClientInfo), ClientCapabilities: json.RawMessage(row.ClientCapabilities),
		LogLevel: row.LogLevel, CreatedAt: row.CreatedAt.UTC(), LastUsedAt: row.LastUsedAt.UTC()}, nil
}

// SetMCPSessionLogLevel records the level of log messages the session
// asked for; an unknown session is ENotFound.
func (db *DB) SetMCPSessionLogLevel(ctx context.Context, id, level string) error {
	res := db.gorm.WithContext(ctx).Model(&mcpSessionRow{}).Where("id = ?", id).Update("log_level", level)
	if res.Error != nil {
		return fmt.Errorf("set MCP session log level: %w", res.Error)
	}
	if res.RowsAffected == 0 {
		return notFound("MCP session not found")
	}
	return nil
}

// TouchMCPSession records a use of the session at at. The last use only
// moves forward: a replica whose clock is behind, or whose touch lands
// after a later one, leaves it. An unknown session is ENotFound.
func (db *DB) TouchMCPSession(ctx context.Context, id string, at time.Time) error {
	res := db.gorm.WithContext(ctx).Model(&mcpSessionRow{}).Where("id = ? AND last_used_at < ?", id, dbTime(at)).
		Update("last_used_at", dbTime(at))
	if res.Error != nil {
		return fmt.Errorf("touch MCP session: %w", res.Error)
	}
	if res.RowsAffected == 0 {
		var n int64
		if err := db.gorm.WithContext(ctx).Model(&mcpSessionRow{}).Where("id = ?", id).Count(&n).Error; err != nil {
			return fmt.Errorf("touch MCP session: %w", err)
		}
		if n == 0 {
			return notFound("MCP session not found")
		}
	}
	return nil
}

// DeleteMCPSession removes a session; an unknown one is ENotFound.
func (db *DB) DeleteMCPSession(ctx context.Context, id string) error {
	res := db.gorm.WithContext(ctx).Where("id = ?", id).Delete(&mcpSessionRow{})
	if res.Error != nil {
		return fmt.Errorf("delete MCP session: %w", res.Error)
	}
	if res.RowsAffected == 0 {
		return notFound("MCP session not found")
	}
	return nil
}

// DeleteIdleMCPSessions removes the sessions last used before a time.
func (db *DB) DeleteIdleMCPSessions(ctx context.Context, before time.Time) (int64, error) {
	res := db.gorm.WithContext(ctx).Where("last_used_at < ?", dbTime(before)).Delete(&mcpSessionRow{})
	if res.Error != nil {
		return 0, fmt.Errorf("delete idle MCP sessions: %w", res.Error)
	}
	return res.RowsAffected, nil
}

// evictBatch is how many sessions EvictMCPSessions removes per statement.
const evictBatch = 500

// EvictMCPSessions removes the user's sessions beyond the keep most
// recently used ones (by last use, then creation, then id) and returns the
// ids it removed. Last use is what TouchMCPSession recorded, which the MCP
// endpoint keeps within about a minute of real use. Run after
// CreateMCPSession, outside any transaction: of concurrent initializes of
// one user, the last eviction to start sees every committed session, so
// the user ends with at most keep.
func (db *DB) EvictMCPSessions(ctx context.Context, userID string, keep int) ([]string, error) {
	if keep < 0 {
		return nil, invalid("MCP sessions to keep must not be negative")
	}
	var removed []string
	for {
		var ids []string
		err := db.gorm.WithContext(ctx).Model(&mcpSessionRow{}).Where("user_id = ?", userID).
			Order("last_used_at DESC, created_at DESC, id DESC").Offset(keep).Limit(evictBatch).Pluck("id", &ids).Error
		if err != nil {
			return removed, fmt.Errorf("list MCP sessions to evict: %w", err)
		}
		if len(ids) == 0 {
			return removed, nil
		}
		if err := db.gorm.WithContext(ctx).Where("user_id = ? AND id IN ?", userID, ids).Delete(&mcpSessionRow{}).Error; err != nil {
			return removed, fmt.Errorf("evict MCP sessions: %w", err)
		}
		removed = append(removed, ids...)
		if len(ids) < evictBatch {
			return removed, nil
		}
	}
}
