package workflows

import (
	"go.temporal.io/sdk/temporal"
)

// Custom search attributes of a task workflow. They are Keyword attributes
// registered on the namespace (make dev passes them to
// `temporal server start-dev --search-attribute`; mcpflow also registers
// missing ones at start-up), so that
// `temporal workflow list --query 'McpTaskStatus="working"'` and the Web UI
// filters work.
var (
	SearchAttrTaskStatus = temporal.NewSearchAttributeKeyKeyword("McpTaskStatus")
	SearchAttrServer     = temporal.NewSearchAttributeKeyKeyword("McpServer")
	SearchAttrTaskName   = temporal.NewSearchAttributeKeyKeyword("McpTaskName")
	SearchAttrUserID     = temporal.NewSearchAttributeKeyKeyword("McpUserId")
	SearchAttrThreadID   = temporal.NewSearchAttributeKeyKeyword("McpThreadId")
	// SearchAttrApprovers is set on the tasks of calls waiting for
	// approval: who may decide ("group:ops,user:carol"). Pending approvals
	// are McpApprovers IS NOT NULL AND McpTaskStatus="working".
	SearchAttrApprovers = temporal.NewSearchAttributeKeyKeyword("McpApprovers")
)

// SearchAttributeNames lists the custom search attributes, all of type
// Keyword, in a stable order.
var SearchAttributeNames = []string{
	SearchAttrTaskStatus.GetName(),
	SearchAttrServer.GetName(),
	SearchAttrTaskName.GetName(),
	SearchAttrUserID.GetName(),
	SearchAttrThreadID.GetName(),
	SearchAttrApprovers.GetName(),
}
