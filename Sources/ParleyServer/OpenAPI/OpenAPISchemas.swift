import Foundation
import ParleyStorage

/// The `components.schemas` of the OpenAPI document: every JSON shape the HTTP API reads or
/// writes, as `Sources/ParleyProtocol` encodes it (absent optionals are left out, never `null`).
///
/// Written by hand next to the types, and kept true from outside: schemathesis checks every
/// answer of a live server against these schemas in `.ci/run`, and `OpenAPITests` decodes
/// real answers with them.
enum OpenAPISchemas {
    typealias Schema = [String: Any]

    static func ref(_ name: String) -> Schema { ["$ref": "#/components/schemas/\(name)"] }
    static func array(_ items: Schema, maxItems: Int? = nil) -> Schema {
        var schema: Schema = ["type": "array", "items": items]
        if let maxItems { schema["maxItems"] = maxItems }
        return schema
    }
    static func string(min: Int? = nil, max: Int? = nil, pattern: String? = nil, format: String? = nil) -> Schema {
        var schema: Schema = ["type": "string"]
        if let min { schema["minLength"] = min }
        if let max { schema["maxLength"] = max }
        if let pattern { schema["pattern"] = pattern }
        if let format { schema["format"] = format }
        return schema
    }
    static func integer(min: Int64? = nil, max: Int64? = nil) -> Schema {
        var schema: Schema = ["type": "integer", "format": "int64"]
        if let min { schema["minimum"] = min }
        if let max { schema["maximum"] = max }
        return schema
    }
    static func enumeration(_ values: [String]) -> Schema { ["type": "string", "enum": values] }
    static var boolean: Schema { ["type": "boolean"] }
    static var id: Schema { ref("Id") }
    static var date: Schema { ref("Timestamp") }
    static var seq: Schema { integer(min: 0) }

    /// An object with these properties, the listed ones always present. Unknown keys are
    /// allowed on input (the contract ignores them) and may be added to output later.
    static func object(_ properties: [String: Schema], required: [String] = [], description: String? = nil) -> Schema {
        var schema: Schema = ["type": "object", "properties": properties]
        if !required.isEmpty { schema["required"] = required.sorted() }
        if let description { schema["description"] = description }
        return schema
    }

    static var all: [String: Schema] { shapes.merging(bodies) { first, _ in first } }

    /// The stored things: users, conversations, messages, attachments.
    static var shapes: [String: Schema] { [
        "Id": string(
            pattern: "^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$", format: "uuid"),
        "Timestamp": ["type": "string", "format": "date-time", "description": "UTC, whole milliseconds: 2026-01-02T03:04:05.678Z"],
        "Error": object([
            "error": object([
                "code": enumeration([
                    "invalid_request", "unauthorized", "forbidden", "not_found", "conflict",
                    "payload_too_large", "rate_limited", "unavailable", "internal",
                ]),
                "message": string(),
                "retryAfter": integer(min: 0),
            ], required: ["code", "message"]),
        ], required: ["error"]),
        "Organization": object([
            "id": id, "name": string(), "allowedEmailDomains": array(string()), "createdAt": date,
            "messageRetentionDays": integer(min: 1),
        ], required: ["id", "name", "allowedEmailDomains", "createdAt"]),
        "Invite": object([
            "code": string(), "organizationId": id, "email": string(), "maxUses": integer(min: 1),
            "uses": integer(min: 0), "expiresAt": date, "createdBy": id,
        ], required: ["code", "organizationId", "maxUses", "uses", "expiresAt", "createdBy"]),
        "User": object([
            "id": id, "organizationId": id, "email": string(), "displayName": string(),
            "isOnline": boolean, "lastSeenAt": date, "role": enumeration(["admin", "member"]), "avatarUrl": string(),
        ], required: ["id", "organizationId", "email", "displayName", "isOnline"]),
        "Member": object(["userId": id, "readSeq": seq, "deliveredSeq": seq], required: ["userId", "readSeq", "deliveredSeq"]),
        "Conversation": object([
            "id": id, "type": enumeration(["direct", "group"]), "name": string(),
            "participantIds": array(id), "members": array(ref("Member")),
            "createdAt": date, "lastActivityAt": date, "lastSeq": seq, "lastMessage": ref("Message"),
            "unreadCount": integer(min: 0), "readSeq": seq, "memberCount": integer(min: 0),
            "mentionCount": integer(min: 0), "muted": boolean, "mutedUntil": date,
        ], required: ["id", "type", "createdAt", "lastActivityAt", "lastSeq", "unreadCount", "readSeq", "memberCount"],
        description: "participantIds and members are left out above the server's large-group size (page them)"),
        "Attachment": object([
            "id": id, "name": string(), "contentType": string(), "size": integer(min: 0), "url": string(),
            "width": integer(min: 0), "height": integer(min: 0), "durationMs": integer(min: 0),
        ], required: ["id", "name", "contentType", "size", "url"]),
        "Message": object([
            "id": id, "conversationId": id, "seq": seq, "updatedSeq": seq, "senderId": id,
            "clientMessageId": string(), "type": enumeration(["text", "image", "video", "audio", "file", "location", "system"]),
            "text": string(), "replyToId": id, "attachment": ref("Attachment"),
            "metadata": ["type": "object", "additionalProperties": string()],
            "reactions": ["type": "object", "additionalProperties": array(id)],
            "createdAt": date, "editedAt": date, "deletedAt": date, "forwardedFromId": id,
            "threadRootId": id, "thread": ref("ThreadSummary"), "mentions": array(id, maxItems: 50),
            "pinnedAt": date, "pinnedBy": id, "preview": ref("LinkPreview"), "deletedBy": id, "senderBlocked": boolean,
        ], required: ["id", "conversationId", "seq", "updatedSeq", "senderId", "clientMessageId", "type", "text", "reactions", "createdAt"]),
        "ThreadSummary": object(["replyCount": integer(min: 1), "lastReplyAt": date, "lastReplySeq": seq],
                                required: ["replyCount", "lastReplyAt", "lastReplySeq"]),
        "LinkPreview": object([
            "url": string(), "title": string(max: 300), "description": string(max: 300), "imageUrl": string(), "siteName": string(max: 300),
        ], required: ["url"]),
        "UploadStatus": object(["uploadId": id, "received": integer(min: 0), "size": integer(min: 0)], required: ["uploadId", "received", "size"]),
    ] }

    /// Request bodies and the answers that wrap the shapes above.
    static var bodies: [String: Schema] { [
        "RegisterRequest": object([
            "organization": string(min: 1, max: 100), "email": string(min: 3, max: 254, format: "email"),
            "password": string(min: 8, max: 128), "displayName": string(min: 1, max: 100), "inviteCode": string(max: 100),
        ], required: ["organization", "email", "password", "displayName"]),
        "LoginRequest": object([
            "organization": string(min: 1, max: 100), "email": string(min: 3, max: 254), "password": string(min: 1, max: 128),
        ], required: ["organization", "email", "password"]),
        "LogoutRequest": object(["deviceToken": string(min: 32, max: 200, pattern: "^[0-9a-fA-F]+$")]),
        "AuthResponse": object([
            "token": string(), "user": ref("User"), "refreshToken": string(), "expiresAt": ref("Timestamp"),
            "refreshExpiresAt": ref("Timestamp"),
        ], required: ["token", "user"]),
        "RefreshRequest": object(["refreshToken": string(max: 200)]),
        "VerificationPending": object(["email": string(), "expiresAt": ref("Timestamp")], required: ["email", "expiresAt"]),
        "VerifyEmailRequest": object(["token": string(max: 100)], required: ["token"]),
        "SignInSession": object([
            "id": string(), "label": string(), "createdAt": ref("Timestamp"), "lastUsedAt": ref("Timestamp"),
            "expiresAt": ref("Timestamp"), "current": boolean,
        ], required: ["id", "createdAt", "lastUsedAt", "expiresAt", "current"]),
        "SignInSessionsResponse": object(["sessions": array(ref("SignInSession"))], required: ["sessions"]),
        "SocketTicket": object(["ticket": string(), "expiresAt": ref("Timestamp")], required: ["ticket", "expiresAt"]),
        "UserResponse": object(["user": ref("User")], required: ["user"]),
        "UsersResponse": object(["users": array(ref("User"))], required: ["users"]),
        "CreateReportRequest": object(["messageId": id, "userId": id, "reason": string(min: 1, max: 1000)], required: ["reason"]),
        "ReportCreatedResponse": object(["id": id, "status": enumeration(["open"])], required: ["id", "status"]),
        "UpdateReportRequest": object(["status": enumeration(["open", "resolved", "dismissed"])], required: ["status"]),
        "Report": object([
            "id": id, "reporterId": id, "messageId": id, "conversationId": id, "userId": id, "reason": string(),
            "status": enumeration(["open", "resolved", "dismissed"]), "createdAt": date, "message": ref("Message"),
        ], required: ["id", "reporterId", "reason", "status", "createdAt"]),
        "ReportsResponse": object(["reports": array(ref("Report")), "hasMore": boolean], required: ["reports", "hasMore"]),
        "AuditEntry": object([
            "id": id, "actorId": id, "action": string(), "targetId": string(), "at": date, "detail": string(),
        ], required: ["id", "actorId", "action", "at"]),
        "AuditResponse": object(["entries": array(ref("AuditEntry")), "hasMore": boolean], required: ["entries", "hasMore"]),
        "UpdateUserRequest": object(["role": enumeration(["admin", "member"])], required: ["role"]),
        "UpdateProfileRequest": object([
            "displayName": string(min: 1, max: 100), "avatarId": ["anyOf": [id, ["type": "null"] as Schema]] as Schema,
        ], description: "At least one of the two; avatarId names an image the caller uploaded, null removes the picture"),
        "OrganizationResponse": object(["organization": ref("Organization")], required: ["organization"]),
        "UpdateOrganizationRequest": object([
            "allowedEmailDomains": array(string(min: 1, max: 253), maxItems: 50),
            "messageRetentionDays": ["type": ["integer", "null"], "minimum": 1, "maximum": 36500] as Schema,
        ], description: "At least one of the two; messageRetentionDays null keeps messages for ever"),
        "EraseAccountRequest": object(["password": string(min: 1)], required: ["password"]),
        "CreateInviteRequest": object([
            "email": string(max: 254, format: "email"), "maxUses": integer(min: 1, max: 1000), "expiresInHours": integer(min: 1, max: 2160),
        ]),
        "InviteResponse": object(["invite": ref("Invite")], required: ["invite"]),
        "InvitesResponse": object(["invites": array(ref("Invite"))], required: ["invites"]),
        "CreateConversationRequest": object([
            "type": enumeration(["direct", "group"]), "participantIds": array(id, maxItems: 1000), "name": string(min: 1, max: 200),
        ], required: ["type", "participantIds"]),
        "RenameConversationRequest": object(["name": string(min: 1, max: 200)], required: ["name"]),
        "AddParticipantsRequest": object(["userIds": array(id, maxItems: 1000)], required: ["userIds"]),
        "ConversationsResponse": object([
            "conversations": array(ref("Conversation")), "hasMore": boolean, "nextBefore": string(), "syncToken": string(),
        ], required: ["conversations"]),
        "ConversationChanges": object([
            "conversations": array(ref("Conversation")), "removedIds": array(id), "syncToken": string(),
        ], required: ["conversations", "removedIds", "syncToken"]),
        "ParticipantsPage": object(["participants": array(ref("Member")), "hasMore": boolean], required: ["participants", "hasMore"]),
        "ReadersPage": object(["userIds": array(id), "hasMore": boolean], required: ["userIds", "hasMore"]),
        "MessagesPage": object(["messages": array(ref("Message")), "hasMore": boolean], required: ["messages", "hasMore"]),
        "ChangesPage": object(["messages": array(ref("Message")), "lastSeq": seq, "hasMore": boolean], required: ["messages", "lastSeq", "hasMore"]),
        "SendMessageRequest": object([
            "conversationId": id, "clientMessageId": string(min: 1, max: 128), "text": string(max: 5000),
            "type": enumeration(["text", "image", "video", "audio", "file", "location"]),
            "replyToId": id, "attachmentId": id, "forwardOf": id, "threadRootId": id, "mentions": array(id, maxItems: 50),
            "metadata": ["type": "object", "maxProperties": 32, "additionalProperties": string(max: 1024)],
        ], required: ["clientMessageId"]),
        "ThreadPage": object(["root": ref("Message"), "messages": array(ref("Message")), "hasMore": boolean],
                             required: ["root", "messages", "hasMore"]),
        "PinRequest": object(["messageId": id], required: ["messageId"]),
        "PinsResponse": object(["messages": array(ref("Message"))], required: ["messages"]),
        "ConversationSettings": object(["muted": boolean, "mutedUntil": date], required: ["muted"]),
        "EditMessageRequest": object(["text": string(min: 1, max: 5000)], required: ["text"]),
        "ReactionRequest": object(["emoji": string(min: 1, max: 8)], required: ["emoji"]),
        "ReadRequest": object(["conversationId": id, "upToSeq": seq, "messageIds": array(id, maxItems: 500)]),
        "ReadResponse": object(["readSeq": seq, "unreadCount": integer(min: 0), "lastSeq": seq], required: ["readSeq", "unreadCount"]),
        "DeliveredRequest": object(["upToSeq": seq], required: ["upToSeq"]),
        "RegisterDeviceRequest": object([
            "platform": enumeration(["ios"]), "token": string(min: 32, max: 200, pattern: "^[0-9a-fA-F]+$"),
            "environment": enumeration(["sandbox", "production"]),
        ], required: ["token", "environment"]),
        "SearchResponse": object([
            "results": array(object([
                "conversationId": id, "seq": seq, "message": ref("Message"), "snippet": string(),
            ], required: ["conversationId", "seq", "message", "snippet"])),
            "nextOffset": integer(min: 0),
        ], required: ["results"]),
        "UploadRequest": object([
            "name": string(min: 1, max: 255), "contentType": string(min: 1, max: 255), "size": integer(min: 0),
        ], required: ["name", "contentType", "size"]),
        "Status": object(["status": string()], required: ["status"]),
    ] }
}
