package mcpflow

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestInputAnswerValidate(t *testing.T) {
	t.Parallel()
	var question map[string]any
	require.NoError(t, json.Unmarshal([]byte(`{"message": "Which one?", "requested_schema": {"type": "object",
		"properties": {"interpretation": {"type": "string", "oneOf": [{"const": "technical"}, {"const": "historical"}]},
		               "count": {"type": "integer", "minimum": 1}},
		"required": ["interpretation"]}}`), &question))
	ok := []InputAnswer{
		{Action: InputAccept, Content: map[string]any{"interpretation": "technical"}},
		{Action: InputAccept, Content: map[string]any{"interpretation": "historical", "count": json.Number("2")}},
		{Action: InputDecline},
		{Action: InputCancel},
	}
	for _, a := range ok {
		require.NoError(t, a.Validate(question), "%+v", a)
	}
	for _, tc := range []struct {
		a    InputAnswer
		want string
	}{
		{InputAnswer{Action: "maybe"}, `action must be "accept", "decline" or "cancel"`},
		{InputAnswer{Action: InputDecline, Content: map[string]any{"x": 1}}, `content is only sent with action "accept"`},
		{InputAnswer{Action: InputAccept}, "content does not match the requested schema: / (required)"},
		{InputAnswer{Action: InputAccept, Content: map[string]any{"interpretation": "secret-other"}}, "content does not match the requested schema: /interpretation (oneOf)"},
		{InputAnswer{Action: InputAccept, Content: map[string]any{"interpretation": "technical", "count": json.Number("0")}}, "content does not match the requested schema: /count (minimum)"},
	} {
		err := tc.a.Validate(question)
		require.Error(t, err, "%+v", tc.a)
		require.Equal(t, EInvalid, ErrorCode(err))
		require.Equal(t, tc.want, ErrorMessage(err))
		require.NotContains(t, ErrorMessage(err), "secret-other", "values are never quoted")
	}
	// A question in the server's own form (an ordinary driver's payload) is
	// not checked beyond the action.
	require.NoError(t, InputAnswer{Action: InputAccept, Content: map[string]any{"anything": true}}.Validate(map[string]any{"question": "Which year?"}))
	// A schema that refers elsewhere is never fetched.
	err := InputAnswer{Action: InputAccept, Content: map[string]any{}}.Validate(map[string]any{"requested_schema": map[string]any{"$ref": "https://example.com/s.json"}})
	require.Equal(t, EInvalid, ErrorCode(err))
}
