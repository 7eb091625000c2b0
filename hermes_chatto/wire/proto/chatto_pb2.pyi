import datetime

from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class RoomKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    ROOM_KIND_UNSPECIFIED: _ClassVar[RoomKind]
    ROOM_KIND_CHANNEL: _ClassVar[RoomKind]
    ROOM_KIND_DM: _ClassVar[RoomKind]

class RoomDirectoryScope(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    ROOM_DIRECTORY_SCOPE_UNSPECIFIED: _ClassVar[RoomDirectoryScope]
    ROOM_DIRECTORY_SCOPE_ALL: _ClassVar[RoomDirectoryScope]
    ROOM_DIRECTORY_SCOPE_CHANNELS: _ClassVar[RoomDirectoryScope]
    ROOM_DIRECTORY_SCOPE_DMS: _ClassVar[RoomDirectoryScope]

class RealtimeProjectionReactionAction(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    REALTIME_PROJECTION_REACTION_ACTION_UNSPECIFIED: _ClassVar[RealtimeProjectionReactionAction]
    REALTIME_PROJECTION_REACTION_ACTION_ADDED: _ClassVar[RealtimeProjectionReactionAction]
    REALTIME_PROJECTION_REACTION_ACTION_REMOVED: _ClassVar[RealtimeProjectionReactionAction]

class RealtimeProjectionPinnedAction(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    REALTIME_PROJECTION_PINNED_ACTION_UNSPECIFIED: _ClassVar[RealtimeProjectionPinnedAction]
    REALTIME_PROJECTION_PINNED_ACTION_CREATED: _ClassVar[RealtimeProjectionPinnedAction]
    REALTIME_PROJECTION_PINNED_ACTION_DELETED: _ClassVar[RealtimeProjectionPinnedAction]

class AssetUploadStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    ASSET_UPLOAD_STATUS_UNSPECIFIED: _ClassVar[AssetUploadStatus]
    ASSET_UPLOAD_STATUS_OPEN: _ClassVar[AssetUploadStatus]
    ASSET_UPLOAD_STATUS_COMPLETED: _ClassVar[AssetUploadStatus]
    ASSET_UPLOAD_STATUS_CANCELLED: _ClassVar[AssetUploadStatus]
ROOM_KIND_UNSPECIFIED: RoomKind
ROOM_KIND_CHANNEL: RoomKind
ROOM_KIND_DM: RoomKind
ROOM_DIRECTORY_SCOPE_UNSPECIFIED: RoomDirectoryScope
ROOM_DIRECTORY_SCOPE_ALL: RoomDirectoryScope
ROOM_DIRECTORY_SCOPE_CHANNELS: RoomDirectoryScope
ROOM_DIRECTORY_SCOPE_DMS: RoomDirectoryScope
REALTIME_PROJECTION_REACTION_ACTION_UNSPECIFIED: RealtimeProjectionReactionAction
REALTIME_PROJECTION_REACTION_ACTION_ADDED: RealtimeProjectionReactionAction
REALTIME_PROJECTION_REACTION_ACTION_REMOVED: RealtimeProjectionReactionAction
REALTIME_PROJECTION_PINNED_ACTION_UNSPECIFIED: RealtimeProjectionPinnedAction
REALTIME_PROJECTION_PINNED_ACTION_CREATED: RealtimeProjectionPinnedAction
REALTIME_PROJECTION_PINNED_ACTION_DELETED: RealtimeProjectionPinnedAction
ASSET_UPLOAD_STATUS_UNSPECIFIED: AssetUploadStatus
ASSET_UPLOAD_STATUS_OPEN: AssetUploadStatus
ASSET_UPLOAD_STATUS_COMPLETED: AssetUploadStatus
ASSET_UPLOAD_STATUS_CANCELLED: AssetUploadStatus

class User(_message.Message):
    __slots__ = ("id", "login", "display_name", "deleted", "avatar_url", "is_bot")
    ID_FIELD_NUMBER: _ClassVar[int]
    LOGIN_FIELD_NUMBER: _ClassVar[int]
    DISPLAY_NAME_FIELD_NUMBER: _ClassVar[int]
    DELETED_FIELD_NUMBER: _ClassVar[int]
    AVATAR_URL_FIELD_NUMBER: _ClassVar[int]
    IS_BOT_FIELD_NUMBER: _ClassVar[int]
    id: str
    login: str
    display_name: str
    deleted: bool
    avatar_url: str
    is_bot: bool
    def __init__(self, id: _Optional[str] = ..., login: _Optional[str] = ..., display_name: _Optional[str] = ..., deleted: _Optional[bool] = ..., avatar_url: _Optional[str] = ..., is_bot: _Optional[bool] = ...) -> None: ...

class PermissionGrant(_message.Message):
    __slots__ = ("permission", "granted")
    PERMISSION_FIELD_NUMBER: _ClassVar[int]
    GRANTED_FIELD_NUMBER: _ClassVar[int]
    permission: str
    granted: bool
    def __init__(self, permission: _Optional[str] = ..., granted: _Optional[bool] = ...) -> None: ...

class ServerViewerPermissions(_message.Message):
    __slots__ = ("permissions",)
    PERMISSIONS_FIELD_NUMBER: _ClassVar[int]
    permissions: _containers.RepeatedCompositeFieldContainer[PermissionGrant]
    def __init__(self, permissions: _Optional[_Iterable[_Union[PermissionGrant, _Mapping]]] = ...) -> None: ...

class ViewerUser(_message.Message):
    __slots__ = ("profile",)
    PROFILE_FIELD_NUMBER: _ClassVar[int]
    profile: User
    def __init__(self, profile: _Optional[_Union[User, _Mapping]] = ...) -> None: ...

class DirectoryMember(_message.Message):
    __slots__ = ("user", "roles", "created_at")
    USER_FIELD_NUMBER: _ClassVar[int]
    ROLES_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    user: User
    roles: _containers.RepeatedScalarFieldContainer[str]
    created_at: _timestamp_pb2.Timestamp
    def __init__(self, user: _Optional[_Union[User, _Mapping]] = ..., roles: _Optional[_Iterable[str]] = ..., created_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class Room(_message.Message):
    __slots__ = ("id", "kind", "name", "description", "archived", "group_id", "universal", "slow_mode_seconds")
    ID_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    ARCHIVED_FIELD_NUMBER: _ClassVar[int]
    GROUP_ID_FIELD_NUMBER: _ClassVar[int]
    UNIVERSAL_FIELD_NUMBER: _ClassVar[int]
    SLOW_MODE_SECONDS_FIELD_NUMBER: _ClassVar[int]
    id: str
    kind: RoomKind
    name: str
    description: str
    archived: bool
    group_id: str
    universal: bool
    slow_mode_seconds: int
    def __init__(self, id: _Optional[str] = ..., kind: _Optional[_Union[RoomKind, str]] = ..., name: _Optional[str] = ..., description: _Optional[str] = ..., archived: _Optional[bool] = ..., group_id: _Optional[str] = ..., universal: _Optional[bool] = ..., slow_mode_seconds: _Optional[int] = ...) -> None: ...

class RoomViewerState(_message.Message):
    __slots__ = ("is_member", "has_unread", "permissions", "slow_mode_next_post_at")
    IS_MEMBER_FIELD_NUMBER: _ClassVar[int]
    HAS_UNREAD_FIELD_NUMBER: _ClassVar[int]
    PERMISSIONS_FIELD_NUMBER: _ClassVar[int]
    SLOW_MODE_NEXT_POST_AT_FIELD_NUMBER: _ClassVar[int]
    is_member: bool
    has_unread: bool
    permissions: _containers.RepeatedCompositeFieldContainer[PermissionGrant]
    slow_mode_next_post_at: _timestamp_pb2.Timestamp
    def __init__(self, is_member: _Optional[bool] = ..., has_unread: _Optional[bool] = ..., permissions: _Optional[_Iterable[_Union[PermissionGrant, _Mapping]]] = ..., slow_mode_next_post_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class RoomWithViewerState(_message.Message):
    __slots__ = ("room", "viewer_state")
    ROOM_FIELD_NUMBER: _ClassVar[int]
    VIEWER_STATE_FIELD_NUMBER: _ClassVar[int]
    room: Room
    viewer_state: RoomViewerState
    def __init__(self, room: _Optional[_Union[Room, _Mapping]] = ..., viewer_state: _Optional[_Union[RoomViewerState, _Mapping]] = ...) -> None: ...

class AssetUrl(_message.Message):
    __slots__ = ("url", "expires_at")
    URL_FIELD_NUMBER: _ClassVar[int]
    EXPIRES_AT_FIELD_NUMBER: _ClassVar[int]
    url: str
    expires_at: _timestamp_pb2.Timestamp
    def __init__(self, url: _Optional[str] = ..., expires_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class MessageAttachment(_message.Message):
    __slots__ = ("id", "filename", "content_type", "width", "height", "asset_url", "thumbnail_asset_url")
    ID_FIELD_NUMBER: _ClassVar[int]
    FILENAME_FIELD_NUMBER: _ClassVar[int]
    CONTENT_TYPE_FIELD_NUMBER: _ClassVar[int]
    WIDTH_FIELD_NUMBER: _ClassVar[int]
    HEIGHT_FIELD_NUMBER: _ClassVar[int]
    ASSET_URL_FIELD_NUMBER: _ClassVar[int]
    THUMBNAIL_ASSET_URL_FIELD_NUMBER: _ClassVar[int]
    id: str
    filename: str
    content_type: str
    width: int
    height: int
    asset_url: AssetUrl
    thumbnail_asset_url: AssetUrl
    def __init__(self, id: _Optional[str] = ..., filename: _Optional[str] = ..., content_type: _Optional[str] = ..., width: _Optional[int] = ..., height: _Optional[int] = ..., asset_url: _Optional[_Union[AssetUrl, _Mapping]] = ..., thumbnail_asset_url: _Optional[_Union[AssetUrl, _Mapping]] = ...) -> None: ...

class MessageReaction(_message.Message):
    __slots__ = ("emoji", "count", "has_reacted", "preview_user_ids")
    EMOJI_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    HAS_REACTED_FIELD_NUMBER: _ClassVar[int]
    PREVIEW_USER_IDS_FIELD_NUMBER: _ClassVar[int]
    emoji: str
    count: int
    has_reacted: bool
    preview_user_ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, emoji: _Optional[str] = ..., count: _Optional[int] = ..., has_reacted: _Optional[bool] = ..., preview_user_ids: _Optional[_Iterable[str]] = ...) -> None: ...

class ThreadViewerState(_message.Message):
    __slots__ = ("is_following", "has_unread")
    IS_FOLLOWING_FIELD_NUMBER: _ClassVar[int]
    HAS_UNREAD_FIELD_NUMBER: _ClassVar[int]
    is_following: bool
    has_unread: bool
    def __init__(self, is_following: _Optional[bool] = ..., has_unread: _Optional[bool] = ...) -> None: ...

class ThreadSummary(_message.Message):
    __slots__ = ("thread_root_event_id", "reply_count", "last_reply_at", "participant_preview_user_ids", "participant_count", "viewer_state")
    THREAD_ROOT_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    REPLY_COUNT_FIELD_NUMBER: _ClassVar[int]
    LAST_REPLY_AT_FIELD_NUMBER: _ClassVar[int]
    PARTICIPANT_PREVIEW_USER_IDS_FIELD_NUMBER: _ClassVar[int]
    PARTICIPANT_COUNT_FIELD_NUMBER: _ClassVar[int]
    VIEWER_STATE_FIELD_NUMBER: _ClassVar[int]
    thread_root_event_id: str
    reply_count: int
    last_reply_at: _timestamp_pb2.Timestamp
    participant_preview_user_ids: _containers.RepeatedScalarFieldContainer[str]
    participant_count: int
    viewer_state: ThreadViewerState
    def __init__(self, thread_root_event_id: _Optional[str] = ..., reply_count: _Optional[int] = ..., last_reply_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., participant_preview_user_ids: _Optional[_Iterable[str]] = ..., participant_count: _Optional[int] = ..., viewer_state: _Optional[_Union[ThreadViewerState, _Mapping]] = ...) -> None: ...

class Message(_message.Message):
    __slots__ = ("id", "room_id", "created_at", "actor_id", "body", "attachments", "updated_at", "in_reply_to", "thread_root_event_id", "echo_of_event_id", "echo_from_thread_root_event_id", "channel_echo_event_id", "reactions", "thread", "deleted_at", "pinned")
    ID_FIELD_NUMBER: _ClassVar[int]
    ROOM_ID_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    ACTOR_ID_FIELD_NUMBER: _ClassVar[int]
    BODY_FIELD_NUMBER: _ClassVar[int]
    ATTACHMENTS_FIELD_NUMBER: _ClassVar[int]
    UPDATED_AT_FIELD_NUMBER: _ClassVar[int]
    IN_REPLY_TO_FIELD_NUMBER: _ClassVar[int]
    THREAD_ROOT_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    ECHO_OF_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    ECHO_FROM_THREAD_ROOT_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    CHANNEL_ECHO_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    REACTIONS_FIELD_NUMBER: _ClassVar[int]
    THREAD_FIELD_NUMBER: _ClassVar[int]
    DELETED_AT_FIELD_NUMBER: _ClassVar[int]
    PINNED_FIELD_NUMBER: _ClassVar[int]
    id: str
    room_id: str
    created_at: _timestamp_pb2.Timestamp
    actor_id: str
    body: str
    attachments: _containers.RepeatedCompositeFieldContainer[MessageAttachment]
    updated_at: _timestamp_pb2.Timestamp
    in_reply_to: str
    thread_root_event_id: str
    echo_of_event_id: str
    echo_from_thread_root_event_id: str
    channel_echo_event_id: str
    reactions: _containers.RepeatedCompositeFieldContainer[MessageReaction]
    thread: ThreadSummary
    deleted_at: _timestamp_pb2.Timestamp
    pinned: bool
    def __init__(self, id: _Optional[str] = ..., room_id: _Optional[str] = ..., created_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., actor_id: _Optional[str] = ..., body: _Optional[str] = ..., attachments: _Optional[_Iterable[_Union[MessageAttachment, _Mapping]]] = ..., updated_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., in_reply_to: _Optional[str] = ..., thread_root_event_id: _Optional[str] = ..., echo_of_event_id: _Optional[str] = ..., echo_from_thread_root_event_id: _Optional[str] = ..., channel_echo_event_id: _Optional[str] = ..., reactions: _Optional[_Iterable[_Union[MessageReaction, _Mapping]]] = ..., thread: _Optional[_Union[ThreadSummary, _Mapping]] = ..., deleted_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., pinned: _Optional[bool] = ...) -> None: ...

class RoomMessagePosted(_message.Message):
    __slots__ = ("message",)
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    message: Message
    def __init__(self, message: _Optional[_Union[Message, _Mapping]] = ...) -> None: ...

class RoomTimelineRoomEvent(_message.Message):
    __slots__ = ("room_id",)
    ROOM_ID_FIELD_NUMBER: _ClassVar[int]
    room_id: str
    def __init__(self, room_id: _Optional[str] = ...) -> None: ...

class RoomTimelineCallEvent(_message.Message):
    __slots__ = ("room_id", "call_id")
    ROOM_ID_FIELD_NUMBER: _ClassVar[int]
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    room_id: str
    call_id: str
    def __init__(self, room_id: _Optional[str] = ..., call_id: _Optional[str] = ...) -> None: ...

class RoomTimelineEvent(_message.Message):
    __slots__ = ("id", "created_at", "actor_id", "message_posted", "room_created", "room_updated", "room_deleted", "room_archived", "room_unarchived", "user_joined_room", "user_left_room", "call_started", "call_ended")
    ID_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    ACTOR_ID_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_POSTED_FIELD_NUMBER: _ClassVar[int]
    ROOM_CREATED_FIELD_NUMBER: _ClassVar[int]
    ROOM_UPDATED_FIELD_NUMBER: _ClassVar[int]
    ROOM_DELETED_FIELD_NUMBER: _ClassVar[int]
    ROOM_ARCHIVED_FIELD_NUMBER: _ClassVar[int]
    ROOM_UNARCHIVED_FIELD_NUMBER: _ClassVar[int]
    USER_JOINED_ROOM_FIELD_NUMBER: _ClassVar[int]
    USER_LEFT_ROOM_FIELD_NUMBER: _ClassVar[int]
    CALL_STARTED_FIELD_NUMBER: _ClassVar[int]
    CALL_ENDED_FIELD_NUMBER: _ClassVar[int]
    id: str
    created_at: _timestamp_pb2.Timestamp
    actor_id: str
    message_posted: RoomMessagePosted
    room_created: RoomTimelineRoomEvent
    room_updated: RoomTimelineRoomEvent
    room_deleted: RoomTimelineRoomEvent
    room_archived: RoomTimelineRoomEvent
    room_unarchived: RoomTimelineRoomEvent
    user_joined_room: RoomTimelineRoomEvent
    user_left_room: RoomTimelineRoomEvent
    call_started: RoomTimelineCallEvent
    call_ended: RoomTimelineCallEvent
    def __init__(self, id: _Optional[str] = ..., created_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., actor_id: _Optional[str] = ..., message_posted: _Optional[_Union[RoomMessagePosted, _Mapping]] = ..., room_created: _Optional[_Union[RoomTimelineRoomEvent, _Mapping]] = ..., room_updated: _Optional[_Union[RoomTimelineRoomEvent, _Mapping]] = ..., room_deleted: _Optional[_Union[RoomTimelineRoomEvent, _Mapping]] = ..., room_archived: _Optional[_Union[RoomTimelineRoomEvent, _Mapping]] = ..., room_unarchived: _Optional[_Union[RoomTimelineRoomEvent, _Mapping]] = ..., user_joined_room: _Optional[_Union[RoomTimelineRoomEvent, _Mapping]] = ..., user_left_room: _Optional[_Union[RoomTimelineRoomEvent, _Mapping]] = ..., call_started: _Optional[_Union[RoomTimelineCallEvent, _Mapping]] = ..., call_ended: _Optional[_Union[RoomTimelineCallEvent, _Mapping]] = ...) -> None: ...

class RoomTimelineIncludes(_message.Message):
    __slots__ = ("users",)
    class UsersEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: User
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[User, _Mapping]] = ...) -> None: ...
    USERS_FIELD_NUMBER: _ClassVar[int]
    users: _containers.MessageMap[str, User]
    def __init__(self, users: _Optional[_Mapping[str, User]] = ...) -> None: ...

class RoomTimelinePage(_message.Message):
    __slots__ = ("events", "start_cursor", "end_cursor", "has_older", "has_newer", "includes")
    EVENTS_FIELD_NUMBER: _ClassVar[int]
    START_CURSOR_FIELD_NUMBER: _ClassVar[int]
    END_CURSOR_FIELD_NUMBER: _ClassVar[int]
    HAS_OLDER_FIELD_NUMBER: _ClassVar[int]
    HAS_NEWER_FIELD_NUMBER: _ClassVar[int]
    INCLUDES_FIELD_NUMBER: _ClassVar[int]
    events: _containers.RepeatedCompositeFieldContainer[RoomTimelineEvent]
    start_cursor: str
    end_cursor: str
    has_older: bool
    has_newer: bool
    includes: RoomTimelineIncludes
    def __init__(self, events: _Optional[_Iterable[_Union[RoomTimelineEvent, _Mapping]]] = ..., start_cursor: _Optional[str] = ..., end_cursor: _Optional[str] = ..., has_older: _Optional[bool] = ..., has_newer: _Optional[bool] = ..., includes: _Optional[_Union[RoomTimelineIncludes, _Mapping]] = ...) -> None: ...

class ServerPublicProfile(_message.Message):
    __slots__ = ("name", "version", "logo_url", "banner_url", "welcome_message", "description")
    NAME_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    LOGO_URL_FIELD_NUMBER: _ClassVar[int]
    BANNER_URL_FIELD_NUMBER: _ClassVar[int]
    WELCOME_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    name: str
    version: str
    logo_url: str
    banner_url: str
    welcome_message: str
    description: str
    def __init__(self, name: _Optional[str] = ..., version: _Optional[str] = ..., logo_url: _Optional[str] = ..., banner_url: _Optional[str] = ..., welcome_message: _Optional[str] = ..., description: _Optional[str] = ...) -> None: ...

class ServerRuntimeConfig(_message.Message):
    __slots__ = ("max_upload_size", "message_edit_window_seconds")
    MAX_UPLOAD_SIZE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_EDIT_WINDOW_SECONDS_FIELD_NUMBER: _ClassVar[int]
    max_upload_size: int
    message_edit_window_seconds: int
    def __init__(self, max_upload_size: _Optional[int] = ..., message_edit_window_seconds: _Optional[int] = ...) -> None: ...

class GetServerRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetServerResponse(_message.Message):
    __slots__ = ("profile",)
    PROFILE_FIELD_NUMBER: _ClassVar[int]
    profile: ServerPublicProfile
    def __init__(self, profile: _Optional[_Union[ServerPublicProfile, _Mapping]] = ...) -> None: ...

class GetViewerRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetViewerResponse(_message.Message):
    __slots__ = ("user", "viewer_permissions")
    USER_FIELD_NUMBER: _ClassVar[int]
    VIEWER_PERMISSIONS_FIELD_NUMBER: _ClassVar[int]
    user: ViewerUser
    viewer_permissions: ServerViewerPermissions
    def __init__(self, user: _Optional[_Union[ViewerUser, _Mapping]] = ..., viewer_permissions: _Optional[_Union[ServerViewerPermissions, _Mapping]] = ...) -> None: ...

class ListRoomsRequest(_message.Message):
    __slots__ = ("scope",)
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    scope: RoomDirectoryScope
    def __init__(self, scope: _Optional[_Union[RoomDirectoryScope, str]] = ...) -> None: ...

class ListRoomsResponse(_message.Message):
    __slots__ = ("rooms",)
    ROOMS_FIELD_NUMBER: _ClassVar[int]
    rooms: _containers.RepeatedCompositeFieldContainer[RoomWithViewerState]
    def __init__(self, rooms: _Optional[_Iterable[_Union[RoomWithViewerState, _Mapping]]] = ...) -> None: ...

class GetRoomRequest(_message.Message):
    __slots__ = ("room_id",)
    ROOM_ID_FIELD_NUMBER: _ClassVar[int]
    room_id: str
    def __init__(self, room_id: _Optional[str] = ...) -> None: ...

class GetRoomResponse(_message.Message):
    __slots__ = ("room",)
    ROOM_FIELD_NUMBER: _ClassVar[int]
    room: RoomWithViewerState
    def __init__(self, room: _Optional[_Union[RoomWithViewerState, _Mapping]] = ...) -> None: ...

class StartDMRequest(_message.Message):
    __slots__ = ("participant_ids",)
    PARTICIPANT_IDS_FIELD_NUMBER: _ClassVar[int]
    participant_ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, participant_ids: _Optional[_Iterable[str]] = ...) -> None: ...

class StartDMResponse(_message.Message):
    __slots__ = ("room",)
    ROOM_FIELD_NUMBER: _ClassVar[int]
    room: Room
    def __init__(self, room: _Optional[_Union[Room, _Mapping]] = ...) -> None: ...

class CreateMessageRequest(_message.Message):
    __slots__ = ("room_id", "body", "attachment_asset_ids", "thread_root_event_id", "in_reply_to", "also_send_to_channel", "link_preview_token", "create_thread")
    ROOM_ID_FIELD_NUMBER: _ClassVar[int]
    BODY_FIELD_NUMBER: _ClassVar[int]
    ATTACHMENT_ASSET_IDS_FIELD_NUMBER: _ClassVar[int]
    THREAD_ROOT_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    IN_REPLY_TO_FIELD_NUMBER: _ClassVar[int]
    ALSO_SEND_TO_CHANNEL_FIELD_NUMBER: _ClassVar[int]
    LINK_PREVIEW_TOKEN_FIELD_NUMBER: _ClassVar[int]
    CREATE_THREAD_FIELD_NUMBER: _ClassVar[int]
    room_id: str
    body: str
    attachment_asset_ids: _containers.RepeatedScalarFieldContainer[str]
    thread_root_event_id: str
    in_reply_to: str
    also_send_to_channel: bool
    link_preview_token: str
    create_thread: bool
    def __init__(self, room_id: _Optional[str] = ..., body: _Optional[str] = ..., attachment_asset_ids: _Optional[_Iterable[str]] = ..., thread_root_event_id: _Optional[str] = ..., in_reply_to: _Optional[str] = ..., also_send_to_channel: _Optional[bool] = ..., link_preview_token: _Optional[str] = ..., create_thread: _Optional[bool] = ...) -> None: ...

class CreateMessageResponse(_message.Message):
    __slots__ = ("message",)
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    message: Message
    def __init__(self, message: _Optional[_Union[Message, _Mapping]] = ...) -> None: ...

class UpdateMessageRequest(_message.Message):
    __slots__ = ("room_id", "event_id", "body", "also_send_to_channel")
    ROOM_ID_FIELD_NUMBER: _ClassVar[int]
    EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    BODY_FIELD_NUMBER: _ClassVar[int]
    ALSO_SEND_TO_CHANNEL_FIELD_NUMBER: _ClassVar[int]
    room_id: str
    event_id: str
    body: str
    also_send_to_channel: bool
    def __init__(self, room_id: _Optional[str] = ..., event_id: _Optional[str] = ..., body: _Optional[str] = ..., also_send_to_channel: _Optional[bool] = ...) -> None: ...

class UpdateMessageResponse(_message.Message):
    __slots__ = ("message",)
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    message: Message
    def __init__(self, message: _Optional[_Union[Message, _Mapping]] = ...) -> None: ...

class DeleteMessageRequest(_message.Message):
    __slots__ = ("room_id", "event_id")
    ROOM_ID_FIELD_NUMBER: _ClassVar[int]
    EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    room_id: str
    event_id: str
    def __init__(self, room_id: _Optional[str] = ..., event_id: _Optional[str] = ...) -> None: ...

class DeleteMessageResponse(_message.Message):
    __slots__ = ("deleted",)
    DELETED_FIELD_NUMBER: _ClassVar[int]
    deleted: bool
    def __init__(self, deleted: _Optional[bool] = ...) -> None: ...

class GetMessageRequest(_message.Message):
    __slots__ = ("room_id", "event_id")
    ROOM_ID_FIELD_NUMBER: _ClassVar[int]
    EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    room_id: str
    event_id: str
    def __init__(self, room_id: _Optional[str] = ..., event_id: _Optional[str] = ...) -> None: ...

class GetMessageResponse(_message.Message):
    __slots__ = ("message",)
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    message: Message
    def __init__(self, message: _Optional[_Union[Message, _Mapping]] = ...) -> None: ...

class GetThreadEventsRequest(_message.Message):
    __slots__ = ("room_id", "thread_root_event_id", "limit", "before", "after")
    ROOM_ID_FIELD_NUMBER: _ClassVar[int]
    THREAD_ROOT_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    BEFORE_FIELD_NUMBER: _ClassVar[int]
    AFTER_FIELD_NUMBER: _ClassVar[int]
    room_id: str
    thread_root_event_id: str
    limit: int
    before: str
    after: str
    def __init__(self, room_id: _Optional[str] = ..., thread_root_event_id: _Optional[str] = ..., limit: _Optional[int] = ..., before: _Optional[str] = ..., after: _Optional[str] = ...) -> None: ...

class GetThreadEventsResponse(_message.Message):
    __slots__ = ("page",)
    PAGE_FIELD_NUMBER: _ClassVar[int]
    page: RoomTimelinePage
    def __init__(self, page: _Optional[_Union[RoomTimelinePage, _Mapping]] = ...) -> None: ...

class GetThreadEventsAroundRequest(_message.Message):
    __slots__ = ("room_id", "thread_root_event_id", "event_id", "limit")
    ROOM_ID_FIELD_NUMBER: _ClassVar[int]
    THREAD_ROOT_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    room_id: str
    thread_root_event_id: str
    event_id: str
    limit: int
    def __init__(self, room_id: _Optional[str] = ..., thread_root_event_id: _Optional[str] = ..., event_id: _Optional[str] = ..., limit: _Optional[int] = ...) -> None: ...

class GetThreadEventsAroundResponse(_message.Message):
    __slots__ = ("page", "target_index")
    PAGE_FIELD_NUMBER: _ClassVar[int]
    TARGET_INDEX_FIELD_NUMBER: _ClassVar[int]
    page: RoomTimelinePage
    target_index: int
    def __init__(self, page: _Optional[_Union[RoomTimelinePage, _Mapping]] = ..., target_index: _Optional[int] = ...) -> None: ...

class GetRoomEventsRequest(_message.Message):
    __slots__ = ("room_id", "limit", "before", "after")
    ROOM_ID_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    BEFORE_FIELD_NUMBER: _ClassVar[int]
    AFTER_FIELD_NUMBER: _ClassVar[int]
    room_id: str
    limit: int
    before: str
    after: str
    def __init__(self, room_id: _Optional[str] = ..., limit: _Optional[int] = ..., before: _Optional[str] = ..., after: _Optional[str] = ...) -> None: ...

class GetRoomEventsResponse(_message.Message):
    __slots__ = ("page",)
    PAGE_FIELD_NUMBER: _ClassVar[int]
    page: RoomTimelinePage
    def __init__(self, page: _Optional[_Union[RoomTimelinePage, _Mapping]] = ...) -> None: ...

class UpdateTypingIndicatorRequest(_message.Message):
    __slots__ = ("room_id", "thread_root_event_id")
    ROOM_ID_FIELD_NUMBER: _ClassVar[int]
    THREAD_ROOT_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    room_id: str
    thread_root_event_id: str
    def __init__(self, room_id: _Optional[str] = ..., thread_root_event_id: _Optional[str] = ...) -> None: ...

class UpdateTypingIndicatorResponse(_message.Message):
    __slots__ = ("updated",)
    UPDATED_FIELD_NUMBER: _ClassVar[int]
    updated: bool
    def __init__(self, updated: _Optional[bool] = ...) -> None: ...

class AddReactionRequest(_message.Message):
    __slots__ = ("room_id", "message_event_id", "emoji")
    ROOM_ID_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    EMOJI_FIELD_NUMBER: _ClassVar[int]
    room_id: str
    message_event_id: str
    emoji: str
    def __init__(self, room_id: _Optional[str] = ..., message_event_id: _Optional[str] = ..., emoji: _Optional[str] = ...) -> None: ...

class AddReactionResponse(_message.Message):
    __slots__ = ("added", "reaction")
    ADDED_FIELD_NUMBER: _ClassVar[int]
    REACTION_FIELD_NUMBER: _ClassVar[int]
    added: bool
    reaction: MessageReaction
    def __init__(self, added: _Optional[bool] = ..., reaction: _Optional[_Union[MessageReaction, _Mapping]] = ...) -> None: ...

class RemoveReactionRequest(_message.Message):
    __slots__ = ("room_id", "message_event_id", "emoji")
    ROOM_ID_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    EMOJI_FIELD_NUMBER: _ClassVar[int]
    room_id: str
    message_event_id: str
    emoji: str
    def __init__(self, room_id: _Optional[str] = ..., message_event_id: _Optional[str] = ..., emoji: _Optional[str] = ...) -> None: ...

class RemoveReactionResponse(_message.Message):
    __slots__ = ("removed", "reaction")
    REMOVED_FIELD_NUMBER: _ClassVar[int]
    REACTION_FIELD_NUMBER: _ClassVar[int]
    removed: bool
    reaction: MessageReaction
    def __init__(self, removed: _Optional[bool] = ..., reaction: _Optional[_Union[MessageReaction, _Mapping]] = ...) -> None: ...

class BatchGetUsersRequest(_message.Message):
    __slots__ = ("user_ids",)
    USER_IDS_FIELD_NUMBER: _ClassVar[int]
    user_ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, user_ids: _Optional[_Iterable[str]] = ...) -> None: ...

class BatchGetUsersResponse(_message.Message):
    __slots__ = ("users",)
    USERS_FIELD_NUMBER: _ClassVar[int]
    users: _containers.RepeatedCompositeFieldContainer[DirectoryMember]
    def __init__(self, users: _Optional[_Iterable[_Union[DirectoryMember, _Mapping]]] = ...) -> None: ...

class GetUserRequest(_message.Message):
    __slots__ = ("user_id", "login")
    USER_ID_FIELD_NUMBER: _ClassVar[int]
    LOGIN_FIELD_NUMBER: _ClassVar[int]
    user_id: str
    login: str
    def __init__(self, user_id: _Optional[str] = ..., login: _Optional[str] = ...) -> None: ...

class GetUserResponse(_message.Message):
    __slots__ = ("user",)
    USER_FIELD_NUMBER: _ClassVar[int]
    user: DirectoryMember
    def __init__(self, user: _Optional[_Union[DirectoryMember, _Mapping]] = ...) -> None: ...

class RealtimeClientHello(_message.Message):
    __slots__ = ("protocol_version", "bearer_token")
    PROTOCOL_VERSION_FIELD_NUMBER: _ClassVar[int]
    BEARER_TOKEN_FIELD_NUMBER: _ClassVar[int]
    protocol_version: int
    bearer_token: str
    def __init__(self, protocol_version: _Optional[int] = ..., bearer_token: _Optional[str] = ...) -> None: ...

class RealtimeSubscribeEvents(_message.Message):
    __slots__ = ("resume_cursor", "retained_room_ids")
    RESUME_CURSOR_FIELD_NUMBER: _ClassVar[int]
    RETAINED_ROOM_IDS_FIELD_NUMBER: _ClassVar[int]
    resume_cursor: str
    retained_room_ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, resume_cursor: _Optional[str] = ..., retained_room_ids: _Optional[_Iterable[str]] = ...) -> None: ...

class RealtimePing(_message.Message):
    __slots__ = ("nonce",)
    NONCE_FIELD_NUMBER: _ClassVar[int]
    nonce: str
    def __init__(self, nonce: _Optional[str] = ...) -> None: ...

class RealtimeHydrateRoom(_message.Message):
    __slots__ = ("room_id",)
    ROOM_ID_FIELD_NUMBER: _ClassVar[int]
    room_id: str
    def __init__(self, room_id: _Optional[str] = ...) -> None: ...

class RealtimeClientFrame(_message.Message):
    __slots__ = ("hello", "subscribe_events", "ping", "hydrate_room")
    HELLO_FIELD_NUMBER: _ClassVar[int]
    SUBSCRIBE_EVENTS_FIELD_NUMBER: _ClassVar[int]
    PING_FIELD_NUMBER: _ClassVar[int]
    HYDRATE_ROOM_FIELD_NUMBER: _ClassVar[int]
    hello: RealtimeClientHello
    subscribe_events: RealtimeSubscribeEvents
    ping: RealtimePing
    hydrate_room: RealtimeHydrateRoom
    def __init__(self, hello: _Optional[_Union[RealtimeClientHello, _Mapping]] = ..., subscribe_events: _Optional[_Union[RealtimeSubscribeEvents, _Mapping]] = ..., ping: _Optional[_Union[RealtimePing, _Mapping]] = ..., hydrate_room: _Optional[_Union[RealtimeHydrateRoom, _Mapping]] = ...) -> None: ...

class RealtimeServerHello(_message.Message):
    __slots__ = ("protocol_version", "server_version", "heartbeat_interval_seconds", "capabilities")
    PROTOCOL_VERSION_FIELD_NUMBER: _ClassVar[int]
    SERVER_VERSION_FIELD_NUMBER: _ClassVar[int]
    HEARTBEAT_INTERVAL_SECONDS_FIELD_NUMBER: _ClassVar[int]
    CAPABILITIES_FIELD_NUMBER: _ClassVar[int]
    protocol_version: int
    server_version: str
    heartbeat_interval_seconds: int
    capabilities: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, protocol_version: _Optional[int] = ..., server_version: _Optional[str] = ..., heartbeat_interval_seconds: _Optional[int] = ..., capabilities: _Optional[_Iterable[str]] = ...) -> None: ...

class RealtimeSubscribed(_message.Message):
    __slots__ = ("start_cursor",)
    START_CURSOR_FIELD_NUMBER: _ClassVar[int]
    start_cursor: str
    def __init__(self, start_cursor: _Optional[str] = ...) -> None: ...

class RealtimeCaughtUp(_message.Message):
    __slots__ = ("cursor",)
    CURSOR_FIELD_NUMBER: _ClassVar[int]
    cursor: str
    def __init__(self, cursor: _Optional[str] = ...) -> None: ...

class RealtimeHeartbeat(_message.Message):
    __slots__ = ("id", "created_at")
    ID_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    id: str
    created_at: _timestamp_pb2.Timestamp
    def __init__(self, id: _Optional[str] = ..., created_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class RealtimePong(_message.Message):
    __slots__ = ("nonce",)
    NONCE_FIELD_NUMBER: _ClassVar[int]
    nonce: str
    def __init__(self, nonce: _Optional[str] = ...) -> None: ...

class RealtimeError(_message.Message):
    __slots__ = ("code", "message", "fatal", "retry_after_ms", "room_id")
    CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    FATAL_FIELD_NUMBER: _ClassVar[int]
    RETRY_AFTER_MS_FIELD_NUMBER: _ClassVar[int]
    ROOM_ID_FIELD_NUMBER: _ClassVar[int]
    code: str
    message: str
    fatal: bool
    retry_after_ms: int
    room_id: str
    def __init__(self, code: _Optional[str] = ..., message: _Optional[str] = ..., fatal: _Optional[bool] = ..., retry_after_ms: _Optional[int] = ..., room_id: _Optional[str] = ...) -> None: ...

class RealtimeClose(_message.Message):
    __slots__ = ("code", "message", "reconnect", "retry_after_ms")
    CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    RECONNECT_FIELD_NUMBER: _ClassVar[int]
    RETRY_AFTER_MS_FIELD_NUMBER: _ClassVar[int]
    code: str
    message: str
    reconnect: bool
    retry_after_ms: int
    def __init__(self, code: _Optional[str] = ..., message: _Optional[str] = ..., reconnect: _Optional[bool] = ..., retry_after_ms: _Optional[int] = ...) -> None: ...

class RealtimeTypingEvent(_message.Message):
    __slots__ = ("room_id", "thread_root_event_id")
    ROOM_ID_FIELD_NUMBER: _ClassVar[int]
    THREAD_ROOT_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    room_id: str
    thread_root_event_id: str
    def __init__(self, room_id: _Optional[str] = ..., thread_root_event_id: _Optional[str] = ...) -> None: ...

class RealtimePresenceChangedEvent(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class RealtimeSessionTerminatedEvent(_message.Message):
    __slots__ = ("reason",)
    REASON_FIELD_NUMBER: _ClassVar[int]
    reason: str
    def __init__(self, reason: _Optional[str] = ...) -> None: ...

class RealtimeEventEnvelope(_message.Message):
    __slots__ = ("id", "created_at", "actor_id", "user_typing", "presence_changed", "session_terminated")
    ID_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    ACTOR_ID_FIELD_NUMBER: _ClassVar[int]
    USER_TYPING_FIELD_NUMBER: _ClassVar[int]
    PRESENCE_CHANGED_FIELD_NUMBER: _ClassVar[int]
    SESSION_TERMINATED_FIELD_NUMBER: _ClassVar[int]
    id: str
    created_at: _timestamp_pb2.Timestamp
    actor_id: str
    user_typing: RealtimeTypingEvent
    presence_changed: RealtimePresenceChangedEvent
    session_terminated: RealtimeSessionTerminatedEvent
    def __init__(self, id: _Optional[str] = ..., created_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., actor_id: _Optional[str] = ..., user_typing: _Optional[_Union[RealtimeTypingEvent, _Mapping]] = ..., presence_changed: _Optional[_Union[RealtimePresenceChangedEvent, _Mapping]] = ..., session_terminated: _Optional[_Union[RealtimeSessionTerminatedEvent, _Mapping]] = ...) -> None: ...

class RealtimeProjectionReset(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class RealtimeProjectionUserRemove(_message.Message):
    __slots__ = ("user_id",)
    USER_ID_FIELD_NUMBER: _ClassVar[int]
    user_id: str
    def __init__(self, user_id: _Optional[str] = ...) -> None: ...

class RealtimeProjectionRoom(_message.Message):
    __slots__ = ("room", "member_user_ids", "has_message_history")
    ROOM_FIELD_NUMBER: _ClassVar[int]
    MEMBER_USER_IDS_FIELD_NUMBER: _ClassVar[int]
    HAS_MESSAGE_HISTORY_FIELD_NUMBER: _ClassVar[int]
    room: RoomWithViewerState
    member_user_ids: _containers.RepeatedScalarFieldContainer[str]
    has_message_history: bool
    def __init__(self, room: _Optional[_Union[RoomWithViewerState, _Mapping]] = ..., member_user_ids: _Optional[_Iterable[str]] = ..., has_message_history: _Optional[bool] = ...) -> None: ...

class RealtimeProjectionRoomRemove(_message.Message):
    __slots__ = ("room_id",)
    ROOM_ID_FIELD_NUMBER: _ClassVar[int]
    room_id: str
    def __init__(self, room_id: _Optional[str] = ...) -> None: ...

class RealtimeProjectionOpaque(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class RealtimeProjectionRoomTimelineReplace(_message.Message):
    __slots__ = ("room_id", "page", "event_cursors")
    class EventCursorsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    ROOM_ID_FIELD_NUMBER: _ClassVar[int]
    PAGE_FIELD_NUMBER: _ClassVar[int]
    EVENT_CURSORS_FIELD_NUMBER: _ClassVar[int]
    room_id: str
    page: RoomTimelinePage
    event_cursors: _containers.ScalarMap[str, str]
    def __init__(self, room_id: _Optional[str] = ..., page: _Optional[_Union[RoomTimelinePage, _Mapping]] = ..., event_cursors: _Optional[_Mapping[str, str]] = ...) -> None: ...

class RealtimeProjectionReactionChange(_message.Message):
    __slots__ = ("action", "message_event_id", "emoji", "user_id")
    ACTION_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    EMOJI_FIELD_NUMBER: _ClassVar[int]
    USER_ID_FIELD_NUMBER: _ClassVar[int]
    action: RealtimeProjectionReactionAction
    message_event_id: str
    emoji: str
    user_id: str
    def __init__(self, action: _Optional[_Union[RealtimeProjectionReactionAction, str]] = ..., message_event_id: _Optional[str] = ..., emoji: _Optional[str] = ..., user_id: _Optional[str] = ...) -> None: ...

class RealtimeProjectionRoomTimelineEventUpsert(_message.Message):
    __slots__ = ("room_id", "event", "includes", "reaction_change", "retain_deleted_row", "event_cursor")
    ROOM_ID_FIELD_NUMBER: _ClassVar[int]
    EVENT_FIELD_NUMBER: _ClassVar[int]
    INCLUDES_FIELD_NUMBER: _ClassVar[int]
    REACTION_CHANGE_FIELD_NUMBER: _ClassVar[int]
    RETAIN_DELETED_ROW_FIELD_NUMBER: _ClassVar[int]
    EVENT_CURSOR_FIELD_NUMBER: _ClassVar[int]
    room_id: str
    event: RoomTimelineEvent
    includes: RoomTimelineIncludes
    reaction_change: RealtimeProjectionReactionChange
    retain_deleted_row: bool
    event_cursor: str
    def __init__(self, room_id: _Optional[str] = ..., event: _Optional[_Union[RoomTimelineEvent, _Mapping]] = ..., includes: _Optional[_Union[RoomTimelineIncludes, _Mapping]] = ..., reaction_change: _Optional[_Union[RealtimeProjectionReactionChange, _Mapping]] = ..., retain_deleted_row: _Optional[bool] = ..., event_cursor: _Optional[str] = ...) -> None: ...

class RealtimeProjectionRoomTimelineEventRemove(_message.Message):
    __slots__ = ("room_id", "event_id")
    ROOM_ID_FIELD_NUMBER: _ClassVar[int]
    EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    room_id: str
    event_id: str
    def __init__(self, room_id: _Optional[str] = ..., event_id: _Optional[str] = ...) -> None: ...

class RealtimeProjectionPinnedMessageChange(_message.Message):
    __slots__ = ("action", "room_id", "message_event_id")
    ACTION_FIELD_NUMBER: _ClassVar[int]
    ROOM_ID_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    action: RealtimeProjectionPinnedAction
    room_id: str
    message_event_id: str
    def __init__(self, action: _Optional[_Union[RealtimeProjectionPinnedAction, str]] = ..., room_id: _Optional[str] = ..., message_event_id: _Optional[str] = ...) -> None: ...

class RealtimeProjectionServerState(_message.Message):
    __slots__ = ("motd", "runtime", "pinned_message_change")
    MOTD_FIELD_NUMBER: _ClassVar[int]
    RUNTIME_FIELD_NUMBER: _ClassVar[int]
    PINNED_MESSAGE_CHANGE_FIELD_NUMBER: _ClassVar[int]
    motd: str
    runtime: ServerRuntimeConfig
    pinned_message_change: RealtimeProjectionPinnedMessageChange
    def __init__(self, motd: _Optional[str] = ..., runtime: _Optional[_Union[ServerRuntimeConfig, _Mapping]] = ..., pinned_message_change: _Optional[_Union[RealtimeProjectionPinnedMessageChange, _Mapping]] = ...) -> None: ...

class RealtimeProjectionRoomViewerStateReplace(_message.Message):
    __slots__ = ("room_id", "viewer_state")
    ROOM_ID_FIELD_NUMBER: _ClassVar[int]
    VIEWER_STATE_FIELD_NUMBER: _ClassVar[int]
    room_id: str
    viewer_state: RoomViewerState
    def __init__(self, room_id: _Optional[str] = ..., viewer_state: _Optional[_Union[RoomViewerState, _Mapping]] = ...) -> None: ...

class RealtimeProjectionThreadViewerStateEntry(_message.Message):
    __slots__ = ("room_id", "thread_root_event_id", "viewer_state")
    ROOM_ID_FIELD_NUMBER: _ClassVar[int]
    THREAD_ROOT_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    VIEWER_STATE_FIELD_NUMBER: _ClassVar[int]
    room_id: str
    thread_root_event_id: str
    viewer_state: ThreadViewerState
    def __init__(self, room_id: _Optional[str] = ..., thread_root_event_id: _Optional[str] = ..., viewer_state: _Optional[_Union[ThreadViewerState, _Mapping]] = ...) -> None: ...

class RealtimeProjectionThreadViewerStatesReplace(_message.Message):
    __slots__ = ("states",)
    STATES_FIELD_NUMBER: _ClassVar[int]
    states: _containers.RepeatedCompositeFieldContainer[RealtimeProjectionThreadViewerStateEntry]
    def __init__(self, states: _Optional[_Iterable[_Union[RealtimeProjectionThreadViewerStateEntry, _Mapping]]] = ...) -> None: ...

class NotificationRoomSummary(_message.Message):
    __slots__ = ("id", "kind", "name")
    ID_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    id: str
    kind: RoomKind
    name: str
    def __init__(self, id: _Optional[str] = ..., kind: _Optional[_Union[RoomKind, str]] = ..., name: _Optional[str] = ...) -> None: ...

class NotificationMessageReference(_message.Message):
    __slots__ = ("room", "event_id", "thread_root_event_id")
    ROOM_FIELD_NUMBER: _ClassVar[int]
    EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    THREAD_ROOT_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    room: NotificationRoomSummary
    event_id: str
    thread_root_event_id: str
    def __init__(self, room: _Optional[_Union[NotificationRoomSummary, _Mapping]] = ..., event_id: _Optional[str] = ..., thread_root_event_id: _Optional[str] = ...) -> None: ...

class NotificationMessageSignal(_message.Message):
    __slots__ = ("message",)
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    message: NotificationMessageReference
    def __init__(self, message: _Optional[_Union[NotificationMessageReference, _Mapping]] = ...) -> None: ...

class NotificationSignal(_message.Message):
    __slots__ = ("direct_message_received", "direct_mention_received", "reply_received", "role_mention_received", "here_mention_received", "all_mention_received", "followed_thread_activity", "followed_room_activity", "reaction_received")
    DIRECT_MESSAGE_RECEIVED_FIELD_NUMBER: _ClassVar[int]
    DIRECT_MENTION_RECEIVED_FIELD_NUMBER: _ClassVar[int]
    REPLY_RECEIVED_FIELD_NUMBER: _ClassVar[int]
    ROLE_MENTION_RECEIVED_FIELD_NUMBER: _ClassVar[int]
    HERE_MENTION_RECEIVED_FIELD_NUMBER: _ClassVar[int]
    ALL_MENTION_RECEIVED_FIELD_NUMBER: _ClassVar[int]
    FOLLOWED_THREAD_ACTIVITY_FIELD_NUMBER: _ClassVar[int]
    FOLLOWED_ROOM_ACTIVITY_FIELD_NUMBER: _ClassVar[int]
    REACTION_RECEIVED_FIELD_NUMBER: _ClassVar[int]
    direct_message_received: NotificationMessageSignal
    direct_mention_received: NotificationMessageSignal
    reply_received: NotificationMessageSignal
    role_mention_received: NotificationMessageSignal
    here_mention_received: NotificationMessageSignal
    all_mention_received: NotificationMessageSignal
    followed_thread_activity: NotificationMessageSignal
    followed_room_activity: NotificationMessageSignal
    reaction_received: NotificationMessageSignal
    def __init__(self, direct_message_received: _Optional[_Union[NotificationMessageSignal, _Mapping]] = ..., direct_mention_received: _Optional[_Union[NotificationMessageSignal, _Mapping]] = ..., reply_received: _Optional[_Union[NotificationMessageSignal, _Mapping]] = ..., role_mention_received: _Optional[_Union[NotificationMessageSignal, _Mapping]] = ..., here_mention_received: _Optional[_Union[NotificationMessageSignal, _Mapping]] = ..., all_mention_received: _Optional[_Union[NotificationMessageSignal, _Mapping]] = ..., followed_thread_activity: _Optional[_Union[NotificationMessageSignal, _Mapping]] = ..., followed_room_activity: _Optional[_Union[NotificationMessageSignal, _Mapping]] = ..., reaction_received: _Optional[_Union[NotificationMessageSignal, _Mapping]] = ...) -> None: ...

class NotificationOccurrence(_message.Message):
    __slots__ = ("id", "created_at", "actor", "signal", "unread")
    ID_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    ACTOR_FIELD_NUMBER: _ClassVar[int]
    SIGNAL_FIELD_NUMBER: _ClassVar[int]
    UNREAD_FIELD_NUMBER: _ClassVar[int]
    id: str
    created_at: _timestamp_pb2.Timestamp
    actor: User
    signal: NotificationSignal
    unread: bool
    def __init__(self, id: _Optional[str] = ..., created_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., actor: _Optional[_Union[User, _Mapping]] = ..., signal: _Optional[_Union[NotificationSignal, _Mapping]] = ..., unread: _Optional[bool] = ...) -> None: ...

class PageRequest(_message.Message):
    __slots__ = ("limit", "offset")
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    limit: int
    offset: int
    def __init__(self, limit: _Optional[int] = ..., offset: _Optional[int] = ...) -> None: ...

class PageInfo(_message.Message):
    __slots__ = ("total_count", "has_more")
    TOTAL_COUNT_FIELD_NUMBER: _ClassVar[int]
    HAS_MORE_FIELD_NUMBER: _ClassVar[int]
    total_count: int
    has_more: bool
    def __init__(self, total_count: _Optional[int] = ..., has_more: _Optional[bool] = ...) -> None: ...

class ListNotificationOccurrencesRequest(_message.Message):
    __slots__ = ("page",)
    PAGE_FIELD_NUMBER: _ClassVar[int]
    page: PageRequest
    def __init__(self, page: _Optional[_Union[PageRequest, _Mapping]] = ...) -> None: ...

class ListNotificationOccurrencesResponse(_message.Message):
    __slots__ = ("occurrences", "page", "unread_count")
    OCCURRENCES_FIELD_NUMBER: _ClassVar[int]
    PAGE_FIELD_NUMBER: _ClassVar[int]
    UNREAD_COUNT_FIELD_NUMBER: _ClassVar[int]
    occurrences: _containers.RepeatedCompositeFieldContainer[NotificationOccurrence]
    page: PageInfo
    unread_count: int
    def __init__(self, occurrences: _Optional[_Iterable[_Union[NotificationOccurrence, _Mapping]]] = ..., page: _Optional[_Union[PageInfo, _Mapping]] = ..., unread_count: _Optional[int] = ...) -> None: ...

class RealtimeProjectionNotificationOccurrencesReplace(_message.Message):
    __slots__ = ("play_notification_sound", "occurrences")
    PLAY_NOTIFICATION_SOUND_FIELD_NUMBER: _ClassVar[int]
    OCCURRENCES_FIELD_NUMBER: _ClassVar[int]
    play_notification_sound: bool
    occurrences: ListNotificationOccurrencesResponse
    def __init__(self, play_notification_sound: _Optional[bool] = ..., occurrences: _Optional[_Union[ListNotificationOccurrencesResponse, _Mapping]] = ...) -> None: ...

class RealtimeProjectionRoomActivity(_message.Message):
    __slots__ = ("room_id",)
    ROOM_ID_FIELD_NUMBER: _ClassVar[int]
    room_id: str
    def __init__(self, room_id: _Optional[str] = ...) -> None: ...

class RealtimeProjectionOperation(_message.Message):
    __slots__ = ("reset", "server_upsert", "viewer_upsert", "user_upsert", "user_remove", "room_upsert", "room_remove", "room_groups_replace", "room_timeline_replace", "room_timeline_event_upsert", "server_state_upsert", "room_timeline_event_remove", "room_viewer_state_replace", "active_calls_replace", "presences_replace", "thread_viewer_states_replace", "room_activity", "notification_occurrences_replace")
    RESET_FIELD_NUMBER: _ClassVar[int]
    SERVER_UPSERT_FIELD_NUMBER: _ClassVar[int]
    VIEWER_UPSERT_FIELD_NUMBER: _ClassVar[int]
    USER_UPSERT_FIELD_NUMBER: _ClassVar[int]
    USER_REMOVE_FIELD_NUMBER: _ClassVar[int]
    ROOM_UPSERT_FIELD_NUMBER: _ClassVar[int]
    ROOM_REMOVE_FIELD_NUMBER: _ClassVar[int]
    ROOM_GROUPS_REPLACE_FIELD_NUMBER: _ClassVar[int]
    ROOM_TIMELINE_REPLACE_FIELD_NUMBER: _ClassVar[int]
    ROOM_TIMELINE_EVENT_UPSERT_FIELD_NUMBER: _ClassVar[int]
    SERVER_STATE_UPSERT_FIELD_NUMBER: _ClassVar[int]
    ROOM_TIMELINE_EVENT_REMOVE_FIELD_NUMBER: _ClassVar[int]
    ROOM_VIEWER_STATE_REPLACE_FIELD_NUMBER: _ClassVar[int]
    ACTIVE_CALLS_REPLACE_FIELD_NUMBER: _ClassVar[int]
    PRESENCES_REPLACE_FIELD_NUMBER: _ClassVar[int]
    THREAD_VIEWER_STATES_REPLACE_FIELD_NUMBER: _ClassVar[int]
    ROOM_ACTIVITY_FIELD_NUMBER: _ClassVar[int]
    NOTIFICATION_OCCURRENCES_REPLACE_FIELD_NUMBER: _ClassVar[int]
    reset: RealtimeProjectionReset
    server_upsert: ServerPublicProfile
    viewer_upsert: GetViewerResponse
    user_upsert: DirectoryMember
    user_remove: RealtimeProjectionUserRemove
    room_upsert: RealtimeProjectionRoom
    room_remove: RealtimeProjectionRoomRemove
    room_groups_replace: RealtimeProjectionOpaque
    room_timeline_replace: RealtimeProjectionRoomTimelineReplace
    room_timeline_event_upsert: RealtimeProjectionRoomTimelineEventUpsert
    server_state_upsert: RealtimeProjectionServerState
    room_timeline_event_remove: RealtimeProjectionRoomTimelineEventRemove
    room_viewer_state_replace: RealtimeProjectionRoomViewerStateReplace
    active_calls_replace: RealtimeProjectionOpaque
    presences_replace: RealtimeProjectionOpaque
    thread_viewer_states_replace: RealtimeProjectionThreadViewerStatesReplace
    room_activity: RealtimeProjectionRoomActivity
    notification_occurrences_replace: RealtimeProjectionNotificationOccurrencesReplace
    def __init__(self, reset: _Optional[_Union[RealtimeProjectionReset, _Mapping]] = ..., server_upsert: _Optional[_Union[ServerPublicProfile, _Mapping]] = ..., viewer_upsert: _Optional[_Union[GetViewerResponse, _Mapping]] = ..., user_upsert: _Optional[_Union[DirectoryMember, _Mapping]] = ..., user_remove: _Optional[_Union[RealtimeProjectionUserRemove, _Mapping]] = ..., room_upsert: _Optional[_Union[RealtimeProjectionRoom, _Mapping]] = ..., room_remove: _Optional[_Union[RealtimeProjectionRoomRemove, _Mapping]] = ..., room_groups_replace: _Optional[_Union[RealtimeProjectionOpaque, _Mapping]] = ..., room_timeline_replace: _Optional[_Union[RealtimeProjectionRoomTimelineReplace, _Mapping]] = ..., room_timeline_event_upsert: _Optional[_Union[RealtimeProjectionRoomTimelineEventUpsert, _Mapping]] = ..., server_state_upsert: _Optional[_Union[RealtimeProjectionServerState, _Mapping]] = ..., room_timeline_event_remove: _Optional[_Union[RealtimeProjectionRoomTimelineEventRemove, _Mapping]] = ..., room_viewer_state_replace: _Optional[_Union[RealtimeProjectionRoomViewerStateReplace, _Mapping]] = ..., active_calls_replace: _Optional[_Union[RealtimeProjectionOpaque, _Mapping]] = ..., presences_replace: _Optional[_Union[RealtimeProjectionOpaque, _Mapping]] = ..., thread_viewer_states_replace: _Optional[_Union[RealtimeProjectionThreadViewerStatesReplace, _Mapping]] = ..., room_activity: _Optional[_Union[RealtimeProjectionRoomActivity, _Mapping]] = ..., notification_occurrences_replace: _Optional[_Union[RealtimeProjectionNotificationOccurrencesReplace, _Mapping]] = ...) -> None: ...

class RealtimeProjectionEvent(_message.Message):
    __slots__ = ("id", "created_at", "actor_id", "resume_cursor", "operations")
    ID_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    ACTOR_ID_FIELD_NUMBER: _ClassVar[int]
    RESUME_CURSOR_FIELD_NUMBER: _ClassVar[int]
    OPERATIONS_FIELD_NUMBER: _ClassVar[int]
    id: str
    created_at: _timestamp_pb2.Timestamp
    actor_id: str
    resume_cursor: str
    operations: _containers.RepeatedCompositeFieldContainer[RealtimeProjectionOperation]
    def __init__(self, id: _Optional[str] = ..., created_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., actor_id: _Optional[str] = ..., resume_cursor: _Optional[str] = ..., operations: _Optional[_Iterable[_Union[RealtimeProjectionOperation, _Mapping]]] = ...) -> None: ...

class RealtimeServerFrame(_message.Message):
    __slots__ = ("hello", "subscribed", "event", "heartbeat", "error", "close", "pong", "caught_up", "projection_event")
    HELLO_FIELD_NUMBER: _ClassVar[int]
    SUBSCRIBED_FIELD_NUMBER: _ClassVar[int]
    EVENT_FIELD_NUMBER: _ClassVar[int]
    HEARTBEAT_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    CLOSE_FIELD_NUMBER: _ClassVar[int]
    PONG_FIELD_NUMBER: _ClassVar[int]
    CAUGHT_UP_FIELD_NUMBER: _ClassVar[int]
    PROJECTION_EVENT_FIELD_NUMBER: _ClassVar[int]
    hello: RealtimeServerHello
    subscribed: RealtimeSubscribed
    event: RealtimeEventEnvelope
    heartbeat: RealtimeHeartbeat
    error: RealtimeError
    close: RealtimeClose
    pong: RealtimePong
    caught_up: RealtimeCaughtUp
    projection_event: RealtimeProjectionEvent
    def __init__(self, hello: _Optional[_Union[RealtimeServerHello, _Mapping]] = ..., subscribed: _Optional[_Union[RealtimeSubscribed, _Mapping]] = ..., event: _Optional[_Union[RealtimeEventEnvelope, _Mapping]] = ..., heartbeat: _Optional[_Union[RealtimeHeartbeat, _Mapping]] = ..., error: _Optional[_Union[RealtimeError, _Mapping]] = ..., close: _Optional[_Union[RealtimeClose, _Mapping]] = ..., pong: _Optional[_Union[RealtimePong, _Mapping]] = ..., caught_up: _Optional[_Union[RealtimeCaughtUp, _Mapping]] = ..., projection_event: _Optional[_Union[RealtimeProjectionEvent, _Mapping]] = ...) -> None: ...

class AssetUpload(_message.Message):
    __slots__ = ("upload_id", "room_id", "status", "committed_offset", "size", "max_chunk_size", "sha256", "expires_at", "asset_id")
    UPLOAD_ID_FIELD_NUMBER: _ClassVar[int]
    ROOM_ID_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    COMMITTED_OFFSET_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    MAX_CHUNK_SIZE_FIELD_NUMBER: _ClassVar[int]
    SHA256_FIELD_NUMBER: _ClassVar[int]
    EXPIRES_AT_FIELD_NUMBER: _ClassVar[int]
    ASSET_ID_FIELD_NUMBER: _ClassVar[int]
    upload_id: str
    room_id: str
    status: AssetUploadStatus
    committed_offset: int
    size: int
    max_chunk_size: int
    sha256: str
    expires_at: _timestamp_pb2.Timestamp
    asset_id: str
    def __init__(self, upload_id: _Optional[str] = ..., room_id: _Optional[str] = ..., status: _Optional[_Union[AssetUploadStatus, str]] = ..., committed_offset: _Optional[int] = ..., size: _Optional[int] = ..., max_chunk_size: _Optional[int] = ..., sha256: _Optional[str] = ..., expires_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., asset_id: _Optional[str] = ...) -> None: ...

class Asset(_message.Message):
    __slots__ = ("id", "filename", "content_type", "size", "width", "height", "asset_url", "thumbnail_asset_url")
    ID_FIELD_NUMBER: _ClassVar[int]
    FILENAME_FIELD_NUMBER: _ClassVar[int]
    CONTENT_TYPE_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    WIDTH_FIELD_NUMBER: _ClassVar[int]
    HEIGHT_FIELD_NUMBER: _ClassVar[int]
    ASSET_URL_FIELD_NUMBER: _ClassVar[int]
    THUMBNAIL_ASSET_URL_FIELD_NUMBER: _ClassVar[int]
    id: str
    filename: str
    content_type: str
    size: int
    width: int
    height: int
    asset_url: AssetUrl
    thumbnail_asset_url: AssetUrl
    def __init__(self, id: _Optional[str] = ..., filename: _Optional[str] = ..., content_type: _Optional[str] = ..., size: _Optional[int] = ..., width: _Optional[int] = ..., height: _Optional[int] = ..., asset_url: _Optional[_Union[AssetUrl, _Mapping]] = ..., thumbnail_asset_url: _Optional[_Union[AssetUrl, _Mapping]] = ...) -> None: ...

class CreateUploadRequest(_message.Message):
    __slots__ = ("room_id", "filename", "content_type", "size", "sha256")
    ROOM_ID_FIELD_NUMBER: _ClassVar[int]
    FILENAME_FIELD_NUMBER: _ClassVar[int]
    CONTENT_TYPE_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    SHA256_FIELD_NUMBER: _ClassVar[int]
    room_id: str
    filename: str
    content_type: str
    size: int
    sha256: str
    def __init__(self, room_id: _Optional[str] = ..., filename: _Optional[str] = ..., content_type: _Optional[str] = ..., size: _Optional[int] = ..., sha256: _Optional[str] = ...) -> None: ...

class CreateUploadResponse(_message.Message):
    __slots__ = ("upload",)
    UPLOAD_FIELD_NUMBER: _ClassVar[int]
    upload: AssetUpload
    def __init__(self, upload: _Optional[_Union[AssetUpload, _Mapping]] = ...) -> None: ...

class UploadChunkRequest(_message.Message):
    __slots__ = ("upload_id", "offset", "content", "chunk_sha256")
    UPLOAD_ID_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    CHUNK_SHA256_FIELD_NUMBER: _ClassVar[int]
    upload_id: str
    offset: int
    content: bytes
    chunk_sha256: str
    def __init__(self, upload_id: _Optional[str] = ..., offset: _Optional[int] = ..., content: _Optional[bytes] = ..., chunk_sha256: _Optional[str] = ...) -> None: ...

class UploadChunkResponse(_message.Message):
    __slots__ = ("upload",)
    UPLOAD_FIELD_NUMBER: _ClassVar[int]
    upload: AssetUpload
    def __init__(self, upload: _Optional[_Union[AssetUpload, _Mapping]] = ...) -> None: ...

class GetUploadRequest(_message.Message):
    __slots__ = ("upload_id",)
    UPLOAD_ID_FIELD_NUMBER: _ClassVar[int]
    upload_id: str
    def __init__(self, upload_id: _Optional[str] = ...) -> None: ...

class GetUploadResponse(_message.Message):
    __slots__ = ("upload",)
    UPLOAD_FIELD_NUMBER: _ClassVar[int]
    upload: AssetUpload
    def __init__(self, upload: _Optional[_Union[AssetUpload, _Mapping]] = ...) -> None: ...

class CompleteUploadRequest(_message.Message):
    __slots__ = ("upload_id",)
    UPLOAD_ID_FIELD_NUMBER: _ClassVar[int]
    upload_id: str
    def __init__(self, upload_id: _Optional[str] = ...) -> None: ...

class CompleteUploadResponse(_message.Message):
    __slots__ = ("upload", "asset")
    UPLOAD_FIELD_NUMBER: _ClassVar[int]
    ASSET_FIELD_NUMBER: _ClassVar[int]
    upload: AssetUpload
    asset: Asset
    def __init__(self, upload: _Optional[_Union[AssetUpload, _Mapping]] = ..., asset: _Optional[_Union[Asset, _Mapping]] = ...) -> None: ...

class CancelUploadRequest(_message.Message):
    __slots__ = ("upload_id",)
    UPLOAD_ID_FIELD_NUMBER: _ClassVar[int]
    upload_id: str
    def __init__(self, upload_id: _Optional[str] = ...) -> None: ...

class CancelUploadResponse(_message.Message):
    __slots__ = ("upload",)
    UPLOAD_FIELD_NUMBER: _ClassVar[int]
    upload: AssetUpload
    def __init__(self, upload: _Optional[_Union[AssetUpload, _Mapping]] = ...) -> None: ...

class GetAssetRequest(_message.Message):
    __slots__ = ("room_id", "asset_id")
    ROOM_ID_FIELD_NUMBER: _ClassVar[int]
    ASSET_ID_FIELD_NUMBER: _ClassVar[int]
    room_id: str
    asset_id: str
    def __init__(self, room_id: _Optional[str] = ..., asset_id: _Optional[str] = ...) -> None: ...

class GetAssetResponse(_message.Message):
    __slots__ = ("asset",)
    ASSET_FIELD_NUMBER: _ClassVar[int]
    asset: Asset
    def __init__(self, asset: _Optional[_Union[Asset, _Mapping]] = ...) -> None: ...

class LeanUpsert(_message.Message):
    __slots__ = ("room_id", "event", "includes", "reaction_change", "retain_deleted_row", "event_cursor")
    ROOM_ID_FIELD_NUMBER: _ClassVar[int]
    EVENT_FIELD_NUMBER: _ClassVar[int]
    INCLUDES_FIELD_NUMBER: _ClassVar[int]
    REACTION_CHANGE_FIELD_NUMBER: _ClassVar[int]
    RETAIN_DELETED_ROW_FIELD_NUMBER: _ClassVar[int]
    EVENT_CURSOR_FIELD_NUMBER: _ClassVar[int]
    room_id: str
    event: RoomTimelineEvent
    includes: bytes
    reaction_change: RealtimeProjectionReactionChange
    retain_deleted_row: bool
    event_cursor: str
    def __init__(self, room_id: _Optional[str] = ..., event: _Optional[_Union[RoomTimelineEvent, _Mapping]] = ..., includes: _Optional[bytes] = ..., reaction_change: _Optional[_Union[RealtimeProjectionReactionChange, _Mapping]] = ..., retain_deleted_row: _Optional[bool] = ..., event_cursor: _Optional[str] = ...) -> None: ...

class LeanOperation(_message.Message):
    __slots__ = ("reset", "server_upsert", "viewer_upsert", "user_upsert", "user_remove", "room_upsert", "room_remove", "room_groups_replace", "room_timeline_replace", "room_timeline_event_upsert", "server_state_upsert", "room_timeline_event_remove", "room_viewer_state_replace", "active_calls_replace", "presences_replace", "thread_viewer_states_replace", "room_activity", "notification_occurrences_replace")
    RESET_FIELD_NUMBER: _ClassVar[int]
    SERVER_UPSERT_FIELD_NUMBER: _ClassVar[int]
    VIEWER_UPSERT_FIELD_NUMBER: _ClassVar[int]
    USER_UPSERT_FIELD_NUMBER: _ClassVar[int]
    USER_REMOVE_FIELD_NUMBER: _ClassVar[int]
    ROOM_UPSERT_FIELD_NUMBER: _ClassVar[int]
    ROOM_REMOVE_FIELD_NUMBER: _ClassVar[int]
    ROOM_GROUPS_REPLACE_FIELD_NUMBER: _ClassVar[int]
    ROOM_TIMELINE_REPLACE_FIELD_NUMBER: _ClassVar[int]
    ROOM_TIMELINE_EVENT_UPSERT_FIELD_NUMBER: _ClassVar[int]
    SERVER_STATE_UPSERT_FIELD_NUMBER: _ClassVar[int]
    ROOM_TIMELINE_EVENT_REMOVE_FIELD_NUMBER: _ClassVar[int]
    ROOM_VIEWER_STATE_REPLACE_FIELD_NUMBER: _ClassVar[int]
    ACTIVE_CALLS_REPLACE_FIELD_NUMBER: _ClassVar[int]
    PRESENCES_REPLACE_FIELD_NUMBER: _ClassVar[int]
    THREAD_VIEWER_STATES_REPLACE_FIELD_NUMBER: _ClassVar[int]
    ROOM_ACTIVITY_FIELD_NUMBER: _ClassVar[int]
    NOTIFICATION_OCCURRENCES_REPLACE_FIELD_NUMBER: _ClassVar[int]
    reset: RealtimeProjectionReset
    server_upsert: ServerPublicProfile
    viewer_upsert: GetViewerResponse
    user_upsert: DirectoryMember
    user_remove: RealtimeProjectionUserRemove
    room_upsert: RealtimeProjectionRoom
    room_remove: RealtimeProjectionRoomRemove
    room_groups_replace: RealtimeProjectionOpaque
    room_timeline_replace: RealtimeProjectionRoomTimelineReplace
    room_timeline_event_upsert: LeanUpsert
    server_state_upsert: RealtimeProjectionServerState
    room_timeline_event_remove: RealtimeProjectionRoomTimelineEventRemove
    room_viewer_state_replace: bytes
    active_calls_replace: RealtimeProjectionOpaque
    presences_replace: RealtimeProjectionOpaque
    thread_viewer_states_replace: bytes
    room_activity: bytes
    notification_occurrences_replace: RealtimeProjectionNotificationOccurrencesReplace
    def __init__(self, reset: _Optional[_Union[RealtimeProjectionReset, _Mapping]] = ..., server_upsert: _Optional[_Union[ServerPublicProfile, _Mapping]] = ..., viewer_upsert: _Optional[_Union[GetViewerResponse, _Mapping]] = ..., user_upsert: _Optional[_Union[DirectoryMember, _Mapping]] = ..., user_remove: _Optional[_Union[RealtimeProjectionUserRemove, _Mapping]] = ..., room_upsert: _Optional[_Union[RealtimeProjectionRoom, _Mapping]] = ..., room_remove: _Optional[_Union[RealtimeProjectionRoomRemove, _Mapping]] = ..., room_groups_replace: _Optional[_Union[RealtimeProjectionOpaque, _Mapping]] = ..., room_timeline_replace: _Optional[_Union[RealtimeProjectionRoomTimelineReplace, _Mapping]] = ..., room_timeline_event_upsert: _Optional[_Union[LeanUpsert, _Mapping]] = ..., server_state_upsert: _Optional[_Union[RealtimeProjectionServerState, _Mapping]] = ..., room_timeline_event_remove: _Optional[_Union[RealtimeProjectionRoomTimelineEventRemove, _Mapping]] = ..., room_viewer_state_replace: _Optional[bytes] = ..., active_calls_replace: _Optional[_Union[RealtimeProjectionOpaque, _Mapping]] = ..., presences_replace: _Optional[_Union[RealtimeProjectionOpaque, _Mapping]] = ..., thread_viewer_states_replace: _Optional[bytes] = ..., room_activity: _Optional[bytes] = ..., notification_occurrences_replace: _Optional[_Union[RealtimeProjectionNotificationOccurrencesReplace, _Mapping]] = ...) -> None: ...

class LeanProjectionEvent(_message.Message):
    __slots__ = ("id", "created_at", "actor_id", "resume_cursor", "operations")
    ID_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    ACTOR_ID_FIELD_NUMBER: _ClassVar[int]
    RESUME_CURSOR_FIELD_NUMBER: _ClassVar[int]
    OPERATIONS_FIELD_NUMBER: _ClassVar[int]
    id: str
    created_at: _timestamp_pb2.Timestamp
    actor_id: str
    resume_cursor: str
    operations: _containers.RepeatedCompositeFieldContainer[LeanOperation]
    def __init__(self, id: _Optional[str] = ..., created_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., actor_id: _Optional[str] = ..., resume_cursor: _Optional[str] = ..., operations: _Optional[_Iterable[_Union[LeanOperation, _Mapping]]] = ...) -> None: ...

class LeanServerFrame(_message.Message):
    __slots__ = ("hello", "subscribed", "event", "heartbeat", "error", "close", "pong", "caught_up", "projection_event")
    HELLO_FIELD_NUMBER: _ClassVar[int]
    SUBSCRIBED_FIELD_NUMBER: _ClassVar[int]
    EVENT_FIELD_NUMBER: _ClassVar[int]
    HEARTBEAT_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    CLOSE_FIELD_NUMBER: _ClassVar[int]
    PONG_FIELD_NUMBER: _ClassVar[int]
    CAUGHT_UP_FIELD_NUMBER: _ClassVar[int]
    PROJECTION_EVENT_FIELD_NUMBER: _ClassVar[int]
    hello: RealtimeServerHello
    subscribed: RealtimeSubscribed
    event: RealtimeEventEnvelope
    heartbeat: RealtimeHeartbeat
    error: RealtimeError
    close: RealtimeClose
    pong: RealtimePong
    caught_up: RealtimeCaughtUp
    projection_event: LeanProjectionEvent
    def __init__(self, hello: _Optional[_Union[RealtimeServerHello, _Mapping]] = ..., subscribed: _Optional[_Union[RealtimeSubscribed, _Mapping]] = ..., event: _Optional[_Union[RealtimeEventEnvelope, _Mapping]] = ..., heartbeat: _Optional[_Union[RealtimeHeartbeat, _Mapping]] = ..., error: _Optional[_Union[RealtimeError, _Mapping]] = ..., close: _Optional[_Union[RealtimeClose, _Mapping]] = ..., pong: _Optional[_Union[RealtimePong, _Mapping]] = ..., caught_up: _Optional[_Union[RealtimeCaughtUp, _Mapping]] = ..., projection_event: _Optional[_Union[LeanProjectionEvent, _Mapping]] = ...) -> None: ...
