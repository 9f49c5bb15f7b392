import Foundation

extension OpenAPIDocument {
    typealias S = OpenAPISchemas

    /// Every route, keyed by its path in OpenAPI form (`{id}` where the router has `:id`).
    static var paths: [String: Schema] { operationalPaths
        .merging(accountPaths) { first, _ in first }
        .merging(conversationPaths) { first, _ in first }
        .merging(messagePaths) { first, _ in first }
        .merging(attachmentPaths) { first, _ in first } }

    static var operationalPaths: [String: Schema] { [
        "/health": ["get": op("operations", "Alive", auth: false, ["200": answer("Alive", "Status")])],
        "/api/v1/health": ["get": op("operations", "Alive (under the API prefix)", auth: false, ["200": answer("Alive", "Status")])],
        "/ready": ["get": op("operations", "Ready: the store can write and the server is not draining", auth: false,
                             ["200": answer("Ready", "Status")], errors: [503])],
        "/metrics": ["get": op("operations", "Prometheus metrics", auth: false, [
            "200": ["description": "Prometheus text format 0.0.4", "content": ["text/plain": ["schema": S.string()]]] as Schema,
        ])],
        "/api/v1/openapi.json": ["get": op("operations", "This document", auth: false, [
            "200": ["description": "OpenAPI 3.1", "content": ["application/json": ["schema": ["type": "object"]]]] as Schema,
        ])],
        "/": ["get": op("web client", "The web client's page", auth: false, [
            "200": ["description": "index.html", "content": ["text/html": ["schema": S.string()]]] as Schema,
        ], errors: [404])],
        "/web/{file}": path("file").merging([
            "get": op("web client", "A file of the web client (scripts, styles, icons)", auth: false, [
                "200": ["description": "The file, with a strict Content-Security-Policy"] as Schema,
            ], errors: [404]),
        ]) { first, _ in first },
        "/api/v1/ws": ["get": op("operations", "The WebSocket (upgrade; the token as bearer, or ?ticket= from /auth/ticket, or ?token=); frames in docs/protocol.md",
                                 query: [
                                     query("ticket", S.string(), "A one-use ticket from POST /auth/ticket (browsers: keeps the token out of URLs)"),
                                     query("token", S.string(), "The access token, for clients that cannot set headers"),
                                 ], [
            "101": answer("Switching to the WebSocket protocol"),
        ], errors: [404])],
    ] }

    static var accountPaths: [String: Schema] { [
        "/api/v1/auth/register": ["post": op("auth", "Create an account (and a new organization, or join one with an invite)", auth: false,
                                             body: jsonBody("RegisterRequest"), [
                                                 "201": answer("Registered", "AuthResponse"),
                                                 "202": answer("Joining by email domain: a link went to the address", "VerificationPending"),
                                             ],
                                             errors: [403, 409, 429, 503])],
        "/api/v1/auth/login": ["post": op("auth", "Sign in", auth: false, body: jsonBody("LoginRequest"),
                                          ["200": answer("Signed in", "AuthResponse")], errors: [401, 429])],
        "/api/v1/auth/refresh": ["post": op("auth", "Renew a sign-in: by its refresh token (answers a new one; no bearer needed), or by a valid bearer token",
                                            auth: false, body: jsonBody("RefreshRequest", required: false),
                                            ["200": answer("A new access token (and refresh token)", "AuthResponse")], errors: [400, 401, 409, 503])],
        "/api/v1/auth/verify": ["post": op("auth", "Finish joining by email domain with the mailed link's token", auth: false,
                                           body: jsonBody("VerifyEmailRequest"), ["201": answer("Registered", "AuthResponse")],
                                           errors: [400, 403, 404, 409, 503])],
        "/api/v1/auth/sessions": ["get": op("auth", "The caller's live sign-ins, newest first",
                                            ["200": answer("Sign-ins", "SignInSessionsResponse")])],
        "/api/v1/auth/sessions/{id}": path("id").merging([
            "delete": op("auth", "End one of the caller's sign-ins (refresh token, access tokens, WebSockets)", ["204": noContent], errors: [404]),
        ]) { first, _ in first },
        "/api/v1/auth/ticket": ["post": op("auth", "A one-use ticket for opening the WebSocket as /ws?ticket= (30 s)",
                                           ["200": answer("A ticket", "SocketTicket")])],
        "/api/v1/auth/logout": ["post": op("devices", "Unregister one push device, or all of the caller's",
                                           body: jsonBody("LogoutRequest", required: false), ["204": noContent])],
        "/api/v1/devices": ["post": op("devices", "Register a push device", body: jsonBody("RegisterDeviceRequest"), ["204": noContent])],
        "/api/v1/devices/{token}": path("token").merging([
            "delete": op("devices", "Unregister a push device", ["204": noContent], errors: [400, 404]),
        ]) { first, _ in first },
        "/api/v1/users/me": [
            "get": op("users", "The caller", ["200": answer("The caller", "User")]),
            "patch": op("users", "Change the caller's display name or picture (an image they uploaded; null removes it)",
                        body: jsonBody("UpdateProfileRequest"), ["200": answer("The caller after the change", "UserResponse")],
                        errors: [400, 404]),
            "delete": op("safety", "Erase the caller's account, confirmed with the password (the last admin cannot)",
                         body: jsonBody("EraseAccountRequest"), ["204": noContent], errors: [403, 409]),
        ],
        "/api/v1/users/me/export": ["get": op("safety", "The caller's data as a ZIP: profile, conversations, messages, uploads", [
            "200": ["description": "A ZIP archive", "content": ["application/zip": ["schema": ["type": "string", "format": "binary"]]]] as Schema,
        ])],
        "/api/v1/users": ["get": op("users", "The caller's organization, by display name", query: [
            query("q", S.string(max: 200), "Part of a name or email"), limitQuery(500),
        ], ["200": answer("Users", "UsersResponse")])],
        "/api/v1/users/{id}": path("id").merging([
            "patch": op("organization", "Change a user's role (admin)", body: jsonBody("UpdateUserRequest"),
                        ["200": answer("The user", "UserResponse")], errors: [403, 404, 409]),
            "delete": op("organization", "Deactivate a user, or with erase=true erase them (admin)", query: [
                query("erase", S.enumeration(["true", "false"]), "Erase: messages become tombstones, uploads go, the profile is emptied"),
            ], ["204": noContent], errors: [403, 404, 409]),
        ]) { first, _ in first },
        "/api/v1/users/blocked": ["get": op("safety", "The users the caller blocks, by name", ["200": answer("Users", "UsersResponse")])],
        "/api/v1/users/{id}/block": path("id").merging([
            "post": op("safety", "Block a user of the organization (the blocked user is not told)", ["204": noContent], errors: [400, 404]),
            "delete": op("safety", "End a block (also when there was none)", ["204": noContent], errors: [400, 404]),
        ]) { first, _ in first },
        "/api/v1/reports": ["post": op("safety", "Report a message the caller can read, a user, or both", body: jsonBody("CreateReportRequest"),
                                       ["201": answer("The report", "ReportCreatedResponse")], errors: [404])],
        "/api/v1/organization/reports": ["get": op("safety", "The organization's reports, newest first (admin)", query: [
            query("status", S.enumeration(["open", "resolved", "dismissed"]), "Only reports of this status"),
            query("before", S.id, "The last report id of the previous page"), limitQuery(200),
        ], ["200": answer("Reports", "ReportsResponse")], errors: [403])],
        "/api/v1/organization/reports/{id}": path("id").merging([
            "patch": op("safety", "Resolve, dismiss or reopen a report (admin)", body: jsonBody("UpdateReportRequest"),
                        ["200": answer("The report", "Report")], errors: [403, 404]),
        ]) { first, _ in first },
        "/api/v1/organization/audit": ["get": op("safety", "The organization's audit log, newest first (admin)", query: [
            query("before", S.id, "The last entry id of the previous page"), limitQuery(200),
        ], ["200": answer("Entries", "AuditResponse")], errors: [403])],
        "/api/v1/users/{id}/sign-out": path("id").merging([
            "post": op("organization", "End every sign-in of a member (admin); the account stays active", ["204": noContent], errors: [403, 404]),
        ]) { first, _ in first },
        "/api/v1/organization": [
            "get": op("organization", "The caller's organization", ["200": answer("The organization", "OrganizationResponse")]),
            "patch": op("organization", "Set the email domains that may join, the message retention, or both (admin)",
                        body: jsonBody("UpdateOrganizationRequest"), ["200": answer("The organization", "OrganizationResponse")], errors: [403]),
        ],
        "/api/v1/organization/invites": [
            "post": op("organization", "Create an invite (admin)", body: jsonBody("CreateInviteRequest", required: false),
                       ["201": answer("The invite", "InviteResponse")], errors: [403]),
            "get": op("organization", "The organization's invites, newest first (admin)",
                      ["200": answer("Invites", "InvitesResponse")], errors: [403]),
        ],
        "/api/v1/organization/invites/{code}": path("code").merging([
            "delete": op("organization", "Withdraw an invite (admin)", ["204": noContent], errors: [403, 404]),
        ]) { first, _ in first },
    ] }

    static var conversationPaths: [String: Schema] { [
        "/api/v1/conversations": [
            "post": op("conversations", "Create a group, or open the direct conversation with someone", body: jsonBody("CreateConversationRequest"), [
                "201": answer("Created", "Conversation"), "200": answer("The existing direct conversation", "Conversation"),
            ], errors: [404]),
            "get": op("conversations", "The caller's conversations by activity; paged, or only what changed since a sync token", query: [
                limitQuery(200), query("before", S.string(), "nextBefore of the previous page"),
                query("changedSince", S.string(), "A syncToken: answers ConversationChanges instead"),
            ], ["200": ["description": "A page, or the changes since the token", "content": ["application/json": ["schema": [
                "anyOf": [S.ref("ConversationsResponse"), S.ref("ConversationChanges")],
            ]]]] as Schema]),
        ],
        "/api/v1/conversations/{id}": path("id").merging([
            "get": op("conversations", "One conversation", ["200": answer("The conversation", "Conversation")], errors: [404]),
            "patch": op("conversations", "Rename a group", body: jsonBody("RenameConversationRequest"),
                        ["200": answer("The conversation", "Conversation")], errors: [404]),
        ]) { first, _ in first },
        "/api/v1/conversations/{id}/participants": path("id").merging([
            "post": op("conversations", "Add people to a group", body: jsonBody("AddParticipantsRequest"),
                       ["200": answer("The conversation", "Conversation")], errors: [404]),
            "get": op("conversations", "Members by user id", query: [query("after", S.id, "Last user id of the previous page"), limitQuery(500)],
                      ["200": answer("Members", "ParticipantsPage")], errors: [404]),
        ]) { first, _ in first },
        "/api/v1/conversations/{id}/participants/{userId}": path("id", "userId").merging([
            "delete": op("conversations", "Remove someone from a group (oneself: leave)",
                         ["200": answer("The conversation", "Conversation")], errors: [404]),
        ]) { first, _ in first },
        "/api/v1/conversations/{id}/read": path("id").merging([
            "post": op("receipts", "Mark read up to a seq (or these messages)", body: jsonBody("ReadRequest"),
                       ["200": answer("The caller's read state", "ReadResponse")], errors: [404]),
        ]) { first, _ in first },
        "/api/v1/conversations/{id}/delivered": path("id").merging([
            "post": op("receipts", "Mark delivered up to a seq", body: jsonBody("DeliveredRequest"),
                       ["200": answer("The caller's receipts", "Member")], errors: [404]),
        ]) { first, _ in first },
    ] }

    static var messagePaths: [String: Schema] { [
        "/api/v1/conversations/{id}/messages": path("id").merging([
            "post": op("messages", "Send (idempotent by clientMessageId), or forward with forwardOf", body: jsonBody("SendMessageRequest"), [
                "201": answer("Stored", "Message"), "200": answer("A retry: the message stored the first time", "Message"),
            ], errors: [404, 409]),
            "get": op("messages", "History, ascending by seq (thread replies left out unless threads=include)", query: [
                query("before", S.seq, "Only below this seq"), query("after", S.seq, "Only above this seq"), limitQuery(200),
                query("threads", S.enumeration(["include", "exclude"]), "include: thread replies too (v1.3; default exclude)"),
            ], ["200": answer("A page", "MessagesPage")], errors: [404]),
        ]) { first, _ in first },
        "/api/v1/conversations/{id}/threads/{rootId}": path("id", "rootId").merging([
            "get": op("threads", "A thread: its root and a page of replies ascending by seq (v1.3)", query: [
                query("before", S.seq, "Only below this seq"), query("after", S.seq, "Only above this seq"), limitQuery(200),
            ], ["200": answer("The root and a page", "ThreadPage")], errors: [404]),
        ]) { first, _ in first },
        "/api/v1/conversations/{id}/pins": path("id").merging([
            "get": op("pins", "Pinned messages, newest pin first (v1.3)", ["200": answer("Pins", "PinsResponse")], errors: [404]),
            "post": op("pins", "Pin a message for everyone (at most 50 a conversation)", body: jsonBody("PinRequest"),
                       ["200": answer("The message as pinned", "Message")], errors: [404, 409]),
        ]) { first, _ in first },
        "/api/v1/conversations/{id}/pins/{messageId}": path("id", "messageId").merging([
            "delete": op("pins", "Unpin a message", ["200": answer("The message as unpinned", "Message")], errors: [404]),
        ]) { first, _ in first },
        "/api/v1/conversations/{id}/settings": path("id").merging([
            "put": op("conversations", "The caller's own settings: mute (v1.3)", body: jsonBody("ConversationSettings"),
                      ["200": answer("The settings as stored", "ConversationSettings")], errors: [404]),
        ]) { first, _ in first },
        "/api/v1/conversations/{id}/changes": path("id").merging([
            "get": op("messages", "Catch-up: messages with updatedSeq above since", query: [
                query("since", S.seq, "The last seq the client has (default 0)"), limitQuery(500),
            ], ["200": answer("Changes", "ChangesPage")], errors: [404]),
        ]) { first, _ in first },
        "/api/v1/conversations/{id}/messages/{messageId}": path("id", "messageId").merging([
            "patch": op("messages", "Edit (sender only)", body: jsonBody("EditMessageRequest"),
                        ["200": answer("The message", "Message")], errors: [403, 404]),
            "delete": op("messages", "Delete (sender only); the message stays as a tombstone",
                         ["200": answer("The tombstone", "Message")], errors: [400, 403, 404]),
        ]) { first, _ in first },
        "/api/v1/conversations/{id}/messages/{messageId}/reactions": path("id", "messageId").merging([
            "post": op("messages", "React", body: jsonBody("ReactionRequest"), ["200": answer("The message", "Message")], errors: [404]),
        ]) { first, _ in first },
        "/api/v1/conversations/{id}/messages/{messageId}/reactions/{emoji}": path("id", "messageId", "emoji").merging([
            "delete": op("messages", "Take a reaction back", ["200": answer("The message", "Message")], errors: [400, 404]),
        ]) { first, _ in first },
        "/api/v1/conversations/{id}/messages/{messageId}/reads": path("id", "messageId").merging([
            "get": op("receipts", "Who has read a message", query: [query("after", S.id, "Last user id of the previous page"), limitQuery(500)],
                      ["200": answer("Readers", "ReadersPage")], errors: [404]),
        ]) { first, _ in first },
        "/api/v1/search": ["get": op("messages", "Full-text search over the caller's conversations", query: [
            ["name": "q", "in": "query", "required": true, "schema": S.string(min: 1, max: 200), "description": "Words; the last matches as a prefix"],
            query("conversationId", S.id, "Only this conversation"), limitQuery(100),
            query("offset", S.integer(min: 0, max: 10_000), "nextOffset of the previous page"),
        ], ["200": answer("Hits, newest first", "SearchResponse")])],
    ] }

    static var attachmentPaths: [String: Schema] { [
        "/api/v1/attachments": ["post": op("attachments", "Upload a file as the raw body (streamed; Content-Type is the file's type)", query: [
            ["name": "name", "in": "query", "required": true, "schema": S.string(min: 1, max: 255), "description": "The file's name"],
        ], body: ["required": true, "content": ["application/octet-stream": ["schema": ["type": "string", "format": "binary"]]]] as Schema,
        ["201": answer("Stored", "Attachment")])],
        "/api/v1/attachments/{id}": path("id").merging([
            "get": op("attachments", "Download (uploader and participants of a conversation it was sent in); Range supported", [
                "200": ["description": "The file", "content": ["*/*": ["schema": ["type": "string", "format": "binary"]]]] as Schema,
                "206": ["description": "The requested range", "content": ["*/*": ["schema": ["type": "string", "format": "binary"]]]] as Schema,
            ], errors: [404, 416]),
        ]) { first, _ in first },
        "/api/v1/attachments/uploads": ["post": op("attachments", "Begin a resumable upload", body: jsonBody("UploadRequest"),
                                                   ["201": answer("Begun", "UploadStatus")])],
        "/api/v1/attachments/uploads/{upload}": path("upload").merging([
            "get": op("attachments", "How much of an upload arrived", ["200": answer("Progress", "UploadStatus")], errors: [404]),
            "put": op("attachments", "Append a chunk of at most 4 MiB at the given offset", query: [
                ["name": "offset", "in": "query", "required": true, "schema": S.seq, "description": "Must equal received"],
            ], body: ["required": true, "content": ["application/octet-stream": ["schema": ["type": "string", "format": "binary"]]]] as Schema,
            ["200": answer("Progress", "UploadStatus")], errors: [404, 409]),
        ]) { first, _ in first },
        "/api/v1/attachments/uploads/{upload}/complete": path("upload").merging([
            "post": op("attachments", "Finish an upload whose bytes have all arrived", ["201": answer("Stored", "Attachment")], errors: [400, 404, 409]),
        ]) { first, _ in first },
    ] }
}
